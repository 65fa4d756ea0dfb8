# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for volta.serving.package_state (main() with stand-in apt-cache, apt-get and dpkg-query)
and for _apt.plan_changes, what a target version changes.

The apt-cache output is the real format (see tests/fixtures/apt and test_apt.py); the dpkg-query rows
are those of NVIDIA's compute-only Debian install (nvidia-driver-cuda nvidia-kernel-dkms, 580.95.05-1).
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.module_utils import _apt, _apt_host
from ansible_collections.volta.serving.plugins.modules import package_state

POLICY = """\
nvidia-driver-cuda:
  Installed: 580.95.05-1
  Candidate: 590.44.01-1
  Version table:
     590.44.01-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
     580.105.08-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
 *** 580.95.05-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
        100 /var/lib/dpkg/status
nvidia-kernel-dkms:
  Installed: 580.95.05-1
  Candidate: 590.44.01-1
  Version table:
     590.44.01-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
     580.105.08-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
 *** 580.95.05-1 600
        600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
        100 /var/lib/dpkg/status
linux-headers-6.1.0-40-amd64:
  Installed: (none)
  Candidate: 6.1.153-1
  Version table:
     6.1.153-1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
"""
FILES = """\
Package files:
 100 /var/lib/dpkg/status
     release a=now
 600 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages
     release o=NVIDIA,l=NVIDIA CUDA,c=,b=amd64
Pinned packages:
"""
DPKG = """\
nvidia-driver-cuda 580.95.05-1 hold installed nvidia-graphics-drivers
nvidia-kernel-dkms 580.95.05-1 hold installed nvidia-graphics-drivers
libcuda1 580.95.05-1 install installed nvidia-graphics-drivers
firmware-nvidia-gsp 580.95.05-1 hold installed nvidia-graphics-drivers
bash 5.2.15-2+b8 install installed bash
nvidia-old 1.0 deinstall config-files nvidia-old
"""
STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> "$FAKE/calls"
case "$(basename "$0")" in
  apt-cache) if [ $# -eq 1 ]; then cat "$FAKE/files"; else cat "$FAKE/policy"; fi ;;
  dpkg-query) cat "$FAKE/dpkg" ;;
  apt-get) touch "$FAKE/refreshed" ;;
esac
"""


@pytest.fixture
def host(tmp_path, monkeypatch):
    fake = tmp_path / "fake"
    bindir = fake / "bin"
    bindir.mkdir(parents=True)
    for name in ("apt-cache", "apt-get", "dpkg-query"):
        (bindir / name).write_text(STUB)
        (bindir / name).chmod(stat.S_IRWXU)
    (fake / "policy").write_text(POLICY)
    (fake / "files").write_text(FILES)
    (fake / "dpkg").write_text(DPKG)
    etc = tmp_path / "etc/apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list.d/nvidia-cuda.sources").write_text("Types: deb\nURIs: http://volta-lab-repo:8080/\n")
    lists = tmp_path / "lists"
    lists.mkdir()
    later = time.time() + 60
    os.utime(lists, (later, later))
    monkeypatch.setenv("FAKE", str(fake))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr(_apt, "ETC_APT", str(etc))
    monkeypatch.setattr(_apt, "LISTS_DIR", str(lists))
    monkeypatch.setattr(_apt, "STAMP", str(tmp_path / "periodic/update-success-stamp"))
    monkeypatch.setattr(_apt, "LOCKS", (str(tmp_path / "no-lock"),))
    monkeypatch.setattr(_apt_host.time, "sleep", lambda _s: None)
    return fake


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        package_state.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


DRIVER = {"packages": ["nvidia-driver-cuda", "nvidia-kernel-dkms"], "branch": "580",
          "hold_patterns": ["nvidia-*", "libnvidia-*", "libcuda1*", "firmware-nvidia-gsp*"],
          "hold_sources": ["*nvidia*", "cuda-drivers"]}


def test_no_change_path_reads_once_and_plans_only_the_missing_hold(host, capsys):
    rc, out = run(capsys, {**DRIVER, "version": ""})
    assert rc == 0 and out["changed"] is False and out["refreshed"] is False
    assert out["version"] == "580.95.05-1"  # "" keeps the installed one, not the 590 candidate
    assert out["held"] == ["firmware-nvidia-gsp", "nvidia-driver-cuda", "nvidia-kernel-dkms"]
    assert out["installed"]["libcuda1"] == "580.95.05-1" and "bash" not in out["installed"]
    assert "nvidia-old" not in out["installed"]
    assert out["changes"] == {"install": [], "upgrade": [], "release": [], "hold": ["libcuda1"]}
    assert out["repositories"] == ["http://volta-lab-repo:8080/cuda/debian12/x86_64"]
    assert out["apt_sources"][0].endswith("sources.list.d/nvidia-cuda.sources")
    assert not (host / "refreshed").exists()


def test_upgrade_inside_the_branch_releases_the_holds_first(host, capsys):
    _rc, out = run(capsys, {**DRIVER, "version": "580.105.08"})
    assert out["version"] == "580.105.08-1"
    assert out["changes"]["install"] == ["nvidia-driver-cuda=580.105.08-1", "nvidia-kernel-dkms=580.105.08-1"]
    assert out["changes"]["upgrade"] == ["nvidia-driver-cuda", "nvidia-kernel-dkms"]
    assert out["changes"]["release"] == ["firmware-nvidia-gsp", "nvidia-driver-cuda", "nvidia-kernel-dkms"]


def test_missing_headers_are_installed_and_an_unknown_package_refreshes(host, capsys):
    _rc, out = run(capsys, {"packages": [], "extra": ["linux-headers-6.1.0-40-amd64", "ninja-build"]})
    assert out["changes"]["install"] == ["linux-headers-6.1.0-40-amd64"]
    assert out["missing"] == ["ninja-build"]
    assert out["refreshed"] is True and out["reasons"] == ["apt has no candidate for ninja-build"]


def test_read_only_never_refreshes_and_query_forces_nothing(host, capsys):
    _rc, out = run(capsys, {"extra": ["ninja-build"], "refresh": False})
    assert out["refreshed"] is False and out["reasons"] == ["apt has no candidate for ninja-build"]
    _rc, out = run(capsys, {"query": ["cuda-keyring"]})
    assert out["refreshed"] is False and out["missing"] == [] and out["reasons"] == []
    assert not (host / "refreshed").exists()


def test_plan_changes_without_target_or_holds_plans_nothing():
    assert _apt.plan_changes({}, {}, ["a"], target="") == {"install": [], "upgrade": [], "release": [], "hold": []}


def test_plan_changes_installs_a_missing_package_at_the_target():
    policy = {"a": {"candidate": "2-1"}, "b": {"candidate": "1"}}
    found = _apt.plan_changes(policy, {"a": "1-1"}, ["a"], ["b"], target="2-1",
                              holds={"installed": {"a": "1-1"}, "held": ["a"]})
    assert found == {"install": ["a=2-1", "b"], "upgrade": ["a"], "release": ["a"], "hold": []}


def test_need_limits_what_forces_a_refresh(host, capsys):
    """Before its repository is set up, the driver's lack of a candidate must not refresh the lists."""
    _rc, out = run(capsys, {"packages": ["nvidia-driver-cuda", "ninja-build"], "version": "", "need": []})
    assert out["refreshed"] is False and out["reasons"] == []
    assert out["missing"] == ["ninja-build"]
    assert not (host / "refreshed").exists()


def test_units_are_read_with_the_packages(host, capsys):
    # systemctl's answers as systemd 252 gives them: a unit without a unit file prints nothing to is-enabled.
    (host / "bin" / "systemctl").write_text(
        '#!/bin/sh\necho "systemctl $*" >> "$FAKE/calls"\ncase "$1 $2" in\n'
        '  "is-active nginx") echo active ;;\n  "is-enabled nginx") echo enabled ;;\n'
        '  "is-active "*) echo inactive; exit 3 ;;\n  *) echo "Failed to get unit file state" >&2; exit 1 ;;\nesac\n')
    (host / "bin" / "systemctl").chmod(stat.S_IRWXU)
    _rc, out = run(capsys, {"query": ["nvidia-driver-cuda"], "refresh": False,
                            "units": ["nginx", "nvidia-persistenced"]})
    assert out["units"] == {"nginx": {"active": "active", "enabled": "enabled"},
                            "nvidia-persistenced": {"active": "inactive", "enabled": ""}}
    assert out["units_down"] == ["nvidia-persistenced"]
    assert out["installed"] == {"nvidia-driver-cuda": "580.95.05-1"} and out["changed"] is False
    _rc, out = run(capsys, {"query": ["nvidia-driver-cuda"], "refresh": False})
    assert (out["units"], out["units_down"]) == ({}, [])
    assert (host / "calls").read_text().count("systemctl") == 4


def test_read_sources_returns_mode_and_fields(host, capsys, tmp_path):
    written = tmp_path / "etc/apt/sources.list.d/nvidia-cuda.sources"
    written.write_text("X-Repolib-Name: nvidia-cuda\nSuites: /\nTypes: deb\nURIs: http://volta-lab-repo:8080/\n")
    written.chmod(0o644)
    missing = tmp_path / "etc/apt/sources.list.d/none.sources"
    _rc, out = run(capsys, {"query": ["cuda-keyring"], "refresh": False, "read_sources": [str(written), str(missing)]})
    assert out["read_sources"] == {
        str(written): {"mode": "0644", "paragraphs": [{"X-Repolib-Name": "nvidia-cuda", "Suites": "/", "Types": "deb",
                                                       "URIs": "http://volta-lab-repo:8080/"}]},
        str(missing): None}
    written.chmod(0o600)
    _rc, out = run(capsys, {"refresh": False, "read_sources": [str(written)]})
    assert out["read_sources"][str(written)]["mode"] == "0600"


def test_toolkit_is_read_in_the_same_call_only_when_asked(host, capsys, tmp_path):
    # The toolkit read of cuda_toolkit_state, here on a host without the toolkit or the interpreter.
    toolkit = {"home": str(tmp_path / "cuda-12.8"), "version": "12.8", "package": "cuda-toolkit-12-8",
               "python": "python3.99", "dev_package": "python3.99-dev"}
    _rc, out = run(capsys, {"query": ["nvidia-driver-cuda"], "refresh": False, "toolkit": toolkit})
    assert out["toolkit"]["nvcc"] == {"exists": False, "release": "none",
                                      "error": f"{tmp_path}/cuda-12.8/bin/nvcc does not exist"}
    assert out["toolkit"]["python_error"] == "python3.99 is not installed" and out["toolkit"]["alternatives"] == {}
    assert ("Python.h of python3.99 is missing (/Python.h; python3.99 is not installed): install python3.99-dev"
            in out["toolkit"]["problems"])
    assert out["installed"] == {"nvidia-driver-cuda": "580.95.05-1"} and out["changed"] is False
    _rc, out = run(capsys, {"query": ["nvidia-driver-cuda"], "refresh": False})
    assert "toolkit" not in out
