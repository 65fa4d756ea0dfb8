# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.unit_state module: main() on a temporary tree, a stand-in systemctl.

The stand-in answers is-active and is-enabled as systemctl does for one unit: the state on stdout
("active", "inactive", "enabled", "disabled"), and nothing on stdout for a unit with no file
(is-enabled prints its error on stderr).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import unit_state

SYSTEMCTL = """#!/bin/sh
case "$1 $2" in
  "is-active volta-a.service") echo active; exit 0 ;;
  "is-active "*) echo inactive; exit 3 ;;
  "is-enabled volta-a.service") echo enabled; exit 0 ;;
  "is-enabled volta-b.service") echo disabled; exit 1 ;;
  *) echo "Failed to get unit file state for $2: No such file or directory" >&2; exit 1 ;;
esac
"""


@pytest.fixture
def host(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    engines = tmp_path / "engines" / "vllm"
    (engines / "vllm-new" / "venv" / "bin").mkdir(parents=True)
    (engines / "vllm-new" / "venv" / "bin" / "vllm").write_text("")
    (engines / "vllm-new" / ".volta-install.json").write_text('{"name": "vllm-new"}\n')
    (engines / "current").symlink_to("vllm-new")
    units = tmp_path / "units"
    units.mkdir()
    (units / "volta-a.service").write_text("# x\n# volta.serving engine_service instance a: y\n")
    (units / "volta-old.service").write_text("# volta.serving engine_service instance old: y\n")
    (units / "volta-other.service").write_text("[Unit]\n")
    state = tmp_path / "state"
    state.mkdir()
    return tmp_path


def instance(tmp_path, name, program="vllm"):
    current = tmp_path / "engines" / "vllm" / "current"
    return {"name": name, "unit": f"volta-{name}.service", "engine": "vllm", "engine_dir": str(current),
            "argv": [str(current / "venv" / "bin" / program), "serve"], "port": 8001}


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        unit_state.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_one_read_of_everything(capsys, host):
    sha = hashlib.sha256(b'{"name": "vllm-new"}\n').hexdigest()
    (host / "state" / "a.started").write_text(f"vllm-new@{sha}\n")
    (host / "state" / "b.started").write_text("vllm-old@123\n")
    args = {"instances": [instance(host, "a"), instance(host, "b"), instance(host, "c", program="llama-server")],
            "state_dir": str(host / "state"), "unit_dir": str(host / "units")}
    rc, out = run(capsys, args)
    assert rc == 0 and out["changed"] is False
    assert out["instances"]["a"] == {"program_exists": True, "active": "active", "enabled": "enabled",
                                     "link_exists": True, "now": f"vllm-new@{sha}", "started": f"vllm-new@{sha}"}
    assert (out["inactive"], out["not_enabled"]) == (["b", "c"], ["volta-b.service", "volta-c.service"])
    assert out["missing_programs"] == ["c"]
    assert [(e["name"], e["previous"], e["install"], e["started"]) for e in out["stale_engine"]] == [
        ("b", "vllm-old", "vllm-new", "vllm-old@123"), ("c", "", "vllm-new", "unknown")]
    assert out["marked_units"] == ["volta-a.service", "volta-old.service"]
    assert out["account_changes"] == []


def test_an_instance_that_is_not_from_the_plan_is_refused(capsys, host):
    rc, out = run(capsys, {"instances": [{"name": "a", "unit": "volta-a.service"}], "state_dir": str(host)})
    assert rc == 1
    assert out["msg"] == ("instance a lacks engine, engine_dir, argv: give the serving plan's instances "
                          "(volta.serving.serving_plan's plan.instances)")


def test_a_missing_account_is_reported(capsys, host):
    user = {"name": "no-such-volta-user", "group": "no-such-volta-group", "groups": [], "home": "/x", "shell": "/y"}
    rc, out = run(capsys, {"instances": [], "state_dir": str(host), "user": user})
    assert rc == 0
    assert out["account_changes"] == ["group no-such-volta-group is missing", "user no-such-volta-user is missing"]
