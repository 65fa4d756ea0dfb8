# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.apt_lists module: main() end to end, with stand-in apt-get and apt-cache.

The stand-ins print the real output formats (tests/fixtures/apt): before `apt-get update` the lists
are the empty ones of a freshly built image (apt-cache prints nothing for the driver), after it they
hold the driver's versions.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.module_utils import _apt, _apt_host
from ansible_collections.volta.serving.plugins.modules import apt_lists

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "apt"
DRIVER = """\
nvidia-driver-580-server:
  Installed: (none)
  Candidate: 580.95.05-0ubuntu0.24.04.1
  Version table:
     580.95.05-0ubuntu0.24.04.1 500
        500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
"""
FILES = """\
Package files:
 100 /var/lib/dpkg/status
     release a=now
 500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
     release v=24.04,o=Ubuntu,a=noble,n=noble,l=Ubuntu,c=restricted,b=amd64
Pinned packages:
"""
APT_CACHE = """#!/bin/sh
# apt-cache stand-in: the lists are refreshed once $FAKE/refreshed exists.
state=empty; [ -e "$FAKE/refreshed" ] && state=full
if [ $# -eq 1 ]; then cat "$FAKE/files-$state"; else cat "$FAKE/policy-$state"; fi
"""
APT_GET = """#!/bin/sh
# apt-get stand-in: fails with apt's lock message while $FAKE/locked counts down.
echo "$*" >> "$FAKE/apt-get.calls"
n=$(cat "$FAKE/locked" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then
  echo $((n - 1)) > "$FAKE/locked"
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (unattended-upgr)" >&2
  echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
  exit 100
fi
if [ -e "$FAKE/broken" ]; then
  echo "E: The repository 'http://volta-lab-repo:8080/ubuntu noble Release' does not have a Release file." >&2
  exit 100
fi
touch "$FAKE/refreshed"
"""


@pytest.fixture
def apt(tmp_path, monkeypatch):
    """Stand-in apt tools and apt directories; returns the folder that holds their state."""
    fake = tmp_path / "fake"
    bindir = fake / "bin"
    bindir.mkdir(parents=True)
    for name, text in (("apt-cache", APT_CACHE), ("apt-get", APT_GET)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(stat.S_IRWXU)
    empty = (FIXTURES / "ubuntu2404-empty-lists" / "policy-packages.txt").read_text(encoding="utf-8")
    (fake / "policy-empty").write_text(empty)
    (fake / "files-empty").write_text((FIXTURES / "ubuntu2404-empty-lists" / "policy-files.txt").read_text())
    (fake / "policy-full").write_text(DRIVER + empty)
    (fake / "files-full").write_text(FILES)
    etc = tmp_path / "etc/apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list.d/lab.sources").write_text("Types: deb\nURIs: http://volta-lab-repo:8080/ubuntu\n")
    lists = tmp_path / "lists"
    lists.mkdir()
    monkeypatch.setenv("FAKE", str(fake))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr(_apt, "ETC_APT", str(etc))
    monkeypatch.setattr(_apt, "LISTS_DIR", str(lists))
    monkeypatch.setattr(_apt, "STAMP", str(tmp_path / "periodic/update-success-stamp"))
    monkeypatch.setattr(_apt, "LOCKS", (str(tmp_path / "no-lock"),))
    monkeypatch.setattr(_apt_host.time, "sleep", lambda _s: None)
    # Lists "refreshed" a minute after the sources were written: fresh, but empty.
    later = time.time() + 60
    os.utime(lists, (later, later))
    return fake


def run_module(capsys, args, check_mode=False):
    if check_mode:
        args = {**args, "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        apt_lists.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_fresh_empty_lists_are_refreshed_for_an_unknown_package(apt, capsys):
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"], "version": ""})
    assert rc == 0, out
    assert out["refreshed"] is True
    assert out["changed"] is False
    assert out["reasons"] == ["apt has no candidate for nvidia-driver-580-server"]
    assert out["version"] == "580.95.05-0ubuntu0.24.04.1"
    assert out["missing"] == []
    assert out["repositories"] == ["http://volta-lab-repo:8080/ubuntu noble/restricted amd64"]
    assert Path(_apt.STAMP).is_file()


def test_known_packages_and_fresh_lists_are_left_alone(apt, capsys):
    (apt / "refreshed").touch()
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"]})
    assert rc == 0, out
    assert (out["refreshed"], out["reasons"]) == (False, [])
    assert not (apt / "apt-get.calls").exists()
    assert "version" not in out


def test_a_source_newer_than_the_lists_is_a_reason(apt, capsys):
    (apt / "refreshed").touch()
    os.utime(_apt.LISTS_DIR, (1000, 1000))
    rc, out = run_module(capsys, {"packages": [], "cache_valid_time": 10**10})
    assert rc == 0, out
    assert out["reasons"] == [f"{_apt.ETC_APT}/sources.list.d/lab.sources is newer than the package lists"]
    assert out["refreshed"] is True


def test_a_package_no_repository_has_is_missing_after_the_refresh(apt, capsys):
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server", "nvidia-driver-590-server"],
                                  "version": "580.95.05"})
    assert rc == 0, out
    assert out["refreshed"] is True
    assert out["missing"] == ["nvidia-driver-590-server"]
    assert out["version"] == "580.95.05-0ubuntu0.24.04.1"


def test_check_mode_refreshes_nothing_and_says_why(apt, capsys):
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"], "version": "",
                                  "sources_changed": True}, check_mode=True)
    assert rc == 0, out
    assert out["refreshed"] is False
    assert out["reasons"] == ["the apt sources changed in this run",
                              "apt has no candidate for nvidia-driver-580-server"]
    assert out["missing"] == ["nvidia-driver-580-server"]
    assert out["version"] == ""
    assert out["repositories"] == []
    assert not (apt / "apt-get.calls").exists()
    assert not Path(_apt.STAMP).exists()


def test_waits_for_the_lists_lock(apt, capsys):
    (apt / "locked").write_text("2\n")
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"], "lock_timeout": 60})
    assert rc == 0, out
    assert out["refreshed"] is True
    assert len((apt / "apt-get.calls").read_text().splitlines()) == 3
    assert "DPkg::Lock::Timeout=60" in (apt / "apt-get.calls").read_text()


def test_gives_up_on_the_lock_after_lock_timeout(apt, capsys):
    (apt / "locked").write_text("1000\n")
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"], "lock_timeout": 0})
    assert rc == 1
    assert out["msg"].startswith("apt-get update failed (rc=100): E: Could not get lock /var/lib/apt/lists/lock.")
    assert "Why: another apt or dpkg held its lock for longer than lock_timeout" in out["msg"]


def test_a_broken_repository_fails_with_apts_error(apt, capsys):
    (apt / "broken").touch()
    rc, out = run_module(capsys, {"packages": ["nvidia-driver-580-server"]})
    assert rc == 1
    assert "does not have a Release file" in out["msg"]
    assert "Why: a repository of the apt sources could not be read." in out["msg"]
