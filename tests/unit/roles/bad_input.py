# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the bad-input suites (test_bad_input_*.py) share: one controller-only site.yml run over an inventory,
and how its output is read (a host refused, nothing crashed)."""

from __future__ import annotations

import yaml
from test_preflight_controller import run_site

# Output that means a crash, Ansible's own unclear refusal, or a run that went past the checks to a host layer.
CRASHES = ("Traceback", "An unhandled exception", "unable to convert", "PLAY [Driver and CUDA toolkit]")


def flat(text):
    """*text* with every run of whitespace made one space (messages wrap in Ansible's output)."""
    return " ".join(text.split())


def run(tmp_path_factory, name, inventory):
    """``(rc, output)`` of site.yml on the controller over *inventory* (a mapping, written as hosts.yml)."""
    tmp_path = tmp_path_factory.mktemp(name)
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return run_site(tmp_path, path)


def refused(out, name):
    """Whether any refusal names host *name* (a failed task on it, or an error line about it)."""
    return f"fatal: [{name}]" in out or any(
        line.startswith(f"[ERROR]: Task failed: Action failed: {name}: ") or f" {name}: " in line.split("Fix:")[0]
        for line in out.splitlines() if line.startswith("[ERROR]"))


def assert_no_crash(out, more=()):
    """No text of CRASHES (nor of *more*) in *out*."""
    for text in (*CRASHES, *more):
        assert text not in out, (text, out[-3000:])
