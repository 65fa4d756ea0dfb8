# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_apt.py against this machine's real apt (the build machines are Debian 12).

Read-only towards the machine's own apt state: the lock test uses a private lists directory
(Dir::State::Lists), never /var/lib/apt/lists.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _apt

pytestmark = pytest.mark.skipif(shutil.which("apt-cache") is None, reason="no apt on this machine")
ENV = {**os.environ, "LC_ALL": "C"}


def apt_cache(*args):
    return subprocess.run(["apt-cache", "policy", *args], capture_output=True, text=True, env=ENV, check=True).stdout


def test_real_policy_of_apt_itself_matches_dpkg():
    installed = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "apt"], capture_output=True, text=True,
                               check=True).stdout
    info = _apt.parse_policy(apt_cache("apt", "volta-serving-no-such-package"))
    assert set(info) == {"apt"}  # apt-cache prints nothing for an unknown package
    assert info["apt"]["installed"] == installed
    assert installed in info["apt"]["versions"]
    assert info["apt"]["candidate"] is not None
    assert _apt.pick_version(info["apt"], "") == installed
    assert _apt.pick_version(info.get("volta-serving-no-such-package"), "") == ""


def test_real_package_files_are_the_configured_repositories():
    repositories = _apt.parse_package_files(apt_cache())
    if not repositories:
        pytest.skip("this machine's package lists are empty")
    assert all(r.split()[0].startswith(("http://", "https://", "file:", "cdrom:", "/")) for r in repositories)
    # Every repository apt reports is named by a sources file the module watches.
    sources = "\n".join(open(p, encoding="utf-8", errors="replace").read()
                        for p in _apt.source_files() if p.endswith((".list", ".sources")))
    assert all(r.split()[0].split("/")[2] in sources for r in repositories if r.startswith("http"))


def test_real_apt_get_update_does_not_wait_for_the_lists_lock(tmp_path):
    # Why apt_lists retries: apt 2.6's apt-get update fails at once while another process holds the
    # lists lock, even with DPkg::Lock::Timeout; the message is one is_lock_error() knows.
    lists = tmp_path / "lists"
    (lists / "partial").mkdir(parents=True)
    fd = os.open(lists / "lock", os.O_RDWR | os.O_CREAT, 0o640)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # apt-get is another process: it sees this lock as held
        start = time.monotonic()
        proc = subprocess.run(
            ["apt-get", "-o", f"Dir::State::Lists={lists}", "-o", "DPkg::Lock::Timeout=30", "update"],
            capture_output=True, text=True, env=ENV, timeout=60, check=False)
        took = time.monotonic() - start
    finally:
        os.close(fd)
    assert proc.returncode != 0
    assert took < 15, f"apt-get update waited {took:.0f} s: apt now honours DPkg::Lock::Timeout for the lists"
    assert _apt.is_lock_error(proc.stderr), proc.stderr
