# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_apt.py: apt-cache policy parsing, version choice, refresh decision."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _apt

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "apt"

# Same format as the real captures (column 5 versions, column 8 origins), with the packages of the
# lab's Ubuntu archive stand-in; the pin of nvidia_driver holds the candidate at 580.95.05.
LAB_PINNED = """\
nvidia-driver-580-server:
  Installed: (none)
  Candidate: 580.95.05-0ubuntu0.24.04.1
  Version table:
     580.105.08-0ubuntu0.24.04.1 500
        500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
     580.95.05-0ubuntu0.24.04.1 1001
        500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
nvidia-utils-580-server:
  Installed: 580.95.05-0ubuntu0.24.04.1
  Candidate: 580.95.05-0ubuntu0.24.04.1
  Version table:
     580.105.08-0ubuntu0.24.04.1 500 (phased 20%)
        500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
 *** 580.95.05-0ubuntu0.24.04.1 1001
        500 http://volta-lab-repo:8080/ubuntu noble/restricted amd64 Packages
        100 /var/lib/dpkg/status
"""


def fixture(name):
    path = FIXTURES / name
    if not path.is_file():
        pytest.fail(f"real apt-cache capture missing: {path}")
    return path.read_text(encoding="utf-8")


def test_empty_lists_know_only_what_dpkg_has():
    # Regression: the host of issue "make demo fails on its first run" - apt prints nothing for the driver.
    policy = _apt.parse_policy(fixture("ubuntu2404-empty-lists/policy-packages.txt"))
    assert sorted(policy) == ["python3.12-dev"]
    assert policy["python3.12-dev"] == {
        "installed": "3.12.3-1ubuntu0.17", "candidate": "3.12.3-1ubuntu0.17",
        "versions": ["3.12.3-1ubuntu0.17"], "origins": []}


def test_debian_lists_versions_origins_and_virtual_package():
    policy = _apt.parse_policy(fixture("debian12/policy-packages.txt"))
    assert set(policy) == {"apt", "mail-transport-agent"}
    assert policy["apt"]["versions"] == ["2.6.2", "2.6.1"]
    assert policy["apt"]["installed"] == policy["apt"]["candidate"] == "2.6.2"
    assert policy["apt"]["origins"] == [
        "http://deb.debian.org/debian-security bookworm-security/main amd64 Packages",
        "http://deb.debian.org/debian bookworm/main amd64 Packages"]
    assert policy["mail-transport-agent"]["candidate"] is None
    assert policy["mail-transport-agent"]["versions"] == []


def test_pinned_and_phased_rows():
    policy = _apt.parse_policy(LAB_PINNED)
    assert policy["nvidia-driver-580-server"]["installed"] is None
    both = ["580.105.08-0ubuntu0.24.04.1", "580.95.05-0ubuntu0.24.04.1"]
    assert policy["nvidia-driver-580-server"]["versions"] == both
    assert policy["nvidia-utils-580-server"]["versions"] == both


@pytest.mark.parametrize(("package", "wanted", "expected"), [
    # With a Candidate.
    ("nvidia-driver-580-server", "", "580.95.05-0ubuntu0.24.04.1"),
    ("nvidia-driver-580-server", "580.105.08", "580.105.08-0ubuntu0.24.04.1"),
    ("nvidia-driver-580-server", "580.95.05-0ubuntu0.24.04.1", "580.95.05-0ubuntu0.24.04.1"),
    ("nvidia-driver-580-server", "580.95", ""),          # a prefix is not a version
    ("nvidia-driver-580-server", "580.159.04", ""),      # not in the lists
    ("nvidia-utils-580-server", "", "580.95.05-0ubuntu0.24.04.1"),  # "" keeps the installed one
    # Without a Candidate: apt does not know the package (the crash of the first demo run).
    ("nvidia-headless-580-server", "", ""),
    ("nvidia-headless-580-server", "580.95.05", ""),
])
def test_pick_version(package, wanted, expected):
    assert _apt.pick_version(_apt.parse_policy(LAB_PINNED).get(package), wanted) == expected


@pytest.mark.parametrize(("info", "wanted", "expected"), [
    (None, "", ""),
    ({"installed": None, "candidate": None, "versions": [], "origins": []}, "", ""),
    ({"installed": "580.95.05-1", "candidate": None, "versions": [], "origins": []}, "", "580.95.05-1"),
    ({"installed": "580.95.05-1", "candidate": None, "versions": [], "origins": []}, "580.95.05", "580.95.05-1"),
])
def test_pick_version_without_candidate(info, wanted, expected):
    assert _apt.pick_version(info, wanted) == expected


def test_pick_version_from_the_real_empty_lists():
    policy = _apt.parse_policy(fixture("ubuntu2404-empty-lists/policy-packages.txt"))
    assert _apt.pick_version(policy.get("nvidia-driver-580-server"), "") == ""
    assert _apt.pick_version(policy.get("python3.12-dev"), "3.12.3") == "3.12.3-1ubuntu0.17"


def test_package_files():
    assert _apt.parse_package_files(fixture("ubuntu2404-empty-lists/policy-files.txt")) == []
    assert _apt.parse_package_files(fixture("debian12/policy-files.txt")) == [
        "http://deb.debian.org/debian-security bookworm-security/main amd64",
        "http://deb.debian.org/debian bookworm-updates/main amd64",
        "http://deb.debian.org/debian bookworm/main amd64"]
    flat = " 500 http://volta-lab-repo:8080/cuda/debian12/x86_64  Packages\n     release o=NVIDIA\n"
    assert _apt.parse_package_files(flat) == ["http://volta-lab-repo:8080/cuda/debian12/x86_64"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Types: deb\nURIs: http://x/\nSuites: /\nSigned-By: /usr/share/keyrings/cuda-archive-keyring.gpg\n",
     ["/usr/share/keyrings/cuda-archive-keyring.gpg"]),
    ("deb [arch=amd64 signed-by=/etc/apt/keyrings/a.gpg] http://x/ noble main\ndeb http://y/ noble main\n",
     ["/etc/apt/keyrings/a.gpg"]),
    ("Signed-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n", []),  # an inline key names no file
])
def test_signed_by_paths(text, expected):
    assert _apt.signed_by_paths(text) == expected


def test_source_files_and_newest(tmp_path):
    etc = tmp_path / "etc/apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "preferences.d").mkdir()
    keyring = tmp_path / "cuda.gpg"
    keyring.write_text("key")
    (etc / "sources.list.d/nvidia-cuda.sources").write_text(f"Types: deb\nSigned-By: {keyring}\n")
    (etc / "sources.list.d/ignored.save").write_text("deb http://z/ x y\n")
    (etc / "preferences.d/pin").write_text("Package: x\n")
    found = _apt.source_files(str(etc))
    assert found == [str(etc / "sources.list.d/nvidia-cuda.sources"), str(etc / "preferences.d/pin"), str(keyring)]
    path, when = _apt.newest_source(found)
    assert path in found
    assert when == max(_apt.changed_at(p) for p in found)
    assert _apt.newest_source([]) == (None, 0.0)


def test_lists_time_takes_the_later_of_lists_and_stamp(tmp_path):
    lists, stamp = tmp_path / "lists", tmp_path / "update-success-stamp"
    lists.mkdir()
    os.utime(lists, (1000, 1000))
    assert _apt.lists_time(str(lists), str(stamp)) == 1000
    stamp.write_text("")
    os.utime(stamp, (2000, 2000))
    assert _apt.lists_time(str(lists), str(stamp)) == 2000
    assert _apt.lists_time(str(tmp_path / "none"), str(tmp_path / "none")) == 0.0


NOW = 1_800_000_000.0


@pytest.mark.parametrize(("kwargs", "expected"), [
    # Fresh lists that know every package: nothing to do.
    ({}, []),
    # The freshly built image: lists 10 s old and empty, so the driver has no candidate.
    ({"unknown": ["nvidia-driver-580-server"]}, ["apt has no candidate for nvidia-driver-580-server"]),
    ({"sources_changed": True}, ["the apt sources changed in this run"]),
    ({"newest": ("/etc/apt/sources.list.d/nvidia-cuda.sources", NOW - 5)},
     ["/etc/apt/sources.list.d/nvidia-cuda.sources is newer than the package lists"]),
    ({"newest": ("/etc/apt/sources.list.d/old.sources", NOW - 20)}, []),
    ({"lists_at": NOW - 7200}, ["the package lists are older than cache_valid_time (7200 s > 3600 s)"]),
    ({"lists_at": 0.0}, ["the package lists are older than cache_valid_time (never refreshed > 3600 s)"]),
])
def test_refresh_reasons(kwargs, expected):
    args = {"sources_changed": False, "newest": (None, 0.0), "lists_at": NOW - 10, "now": NOW,
            "cache_valid_time": 3600, "unknown": []}
    args.update(kwargs)
    assert _apt.refresh_reasons(**args) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # Printed by apt 2.6.2 on this kind of host (another process held the lock).
    ("E: Could not get lock /var/lib/apt/lists/lock. It is held by process 24342 (python3)\n"
     "E: Unable to lock directory /var/lib/apt/lists/\n", True),
    ("E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?", True),
    ("E: The repository 'http://x noble Release' does not have a Release file.", False),
])
def test_is_lock_error(text, expected):
    assert _apt.is_lock_error(text) is expected


def test_lock_holder_names_the_other_process(tmp_path):
    lock = tmp_path / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(30)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        found = _apt.lock_holder([str(tmp_path / "absent"), str(lock)])
        assert found is not None
        assert found.startswith(f"{holder.pid} (python")
        assert found.endswith(f") on {lock}")
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 5
    while _apt.lock_holder([str(lock)]) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _apt.lock_holder([str(lock)]) is None


# Debian's names span branches: apt-cache policy of nvidia-driver-cuda on a host of NVIDIA's debian12 repository
# with 590 published (the shape of apt's output; versions as the lab's stand-in serves them).
DEBIAN_SPANNING = {"installed": None, "candidate": "590.44.01-1",
                   "versions": ["590.44.01-1", "580.105.08-1", "580.95.05-1"], "origins": []}


@pytest.mark.parametrize(("info", "wanted", "branch", "expected"), [
    (DEBIAN_SPANNING, "", "580", "580.105.08-1"),
    (DEBIAN_SPANNING, "", "", "590.44.01-1"),
    (DEBIAN_SPANNING, "580.95.05", "580", "580.95.05-1"),
    (DEBIAN_SPANNING, "590.44.01", "580", ""),
    (dict(DEBIAN_SPANNING, installed="580.95.05-1"), "", "580", "580.95.05-1"),
    (dict(DEBIAN_SPANNING, installed="590.44.01-1"), "", "580", "580.105.08-1"),
    ({"installed": None, "candidate": "1:580.95.05-1", "versions": ["1:580.95.05-1"]}, "580.95.05", "580",
     "1:580.95.05-1"),
    ({"installed": None, "candidate": "590.44.01-1", "versions": ["590.44.01-1"]}, "", "580", ""),
])
def test_pick_version_within_a_branch(info, wanted, branch, expected):
    assert _apt.pick_version(info, wanted, branch) == expected


# Rows as _apt_host.dpkg_rows reads them (its DPKG_FORMAT): name, version, want, status, source.
DPKG_ROWS = [
    "ninja-build 1.11.1-2 install installed ninja-build",
    "cmake 3.25.1-1 install unpacked cmake",
    "build-essential 12.9 install half-configured build-essential",
    "python3-venv 3.11.2-1+b1 deinstall config-files python3-defaults",
    "python3.12-venv 3.12.3-1ubuntu0.8 hold installed python3.12",
]


def test_not_installed_counts_only_installed_packages():
    names = ["ninja-build", "cmake", "build-essential", "python3-venv", "python3.12-venv", "python3-dev"]
    assert _apt.not_installed(DPKG_ROWS, names) == ["cmake", "build-essential", "python3-venv", "python3-dev"]
    assert _apt.not_installed(DPKG_ROWS, []) == []


def test_not_installed_reads_the_real_dpkg_query():
    # This machine's dpkg: dpkg itself is installed; a name no distribution uses is not.
    from ansible_collections.volta.serving.plugins.module_utils._apt_host import DPKG_FORMAT
    out = subprocess.run(["dpkg-query", "-W", "-f=" + DPKG_FORMAT], capture_output=True, text=True, check=True)
    assert _apt.not_installed(out.stdout.splitlines(), ["dpkg", "volta-no-such-package"]) == ["volta-no-such-package"]


# Written by ansible.builtin.deb822_repository (ansible-core 2.19.14) on a lab host for cuda_repo.yml's options.
DEB822_WRITTEN = """\
X-Repolib-Name: nvidia-cuda
Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg
Suites: /
Types: deb
URIs: http://volta-lab-repo:8080/cuda/ubuntu2404/x86_64/
"""


def test_deb822_paragraphs_of_the_file_deb822_repository_writes():
    assert _apt.deb822_paragraphs(DEB822_WRITTEN) == [{
        "X-Repolib-Name": "nvidia-cuda", "Signed-By": "/usr/share/keyrings/cuda-archive-keyring.gpg",
        "Suites": "/", "Types": "deb", "URIs": "http://volta-lab-repo:8080/cuda/ubuntu2404/x86_64/"}]


def test_deb822_paragraphs_comments_continuations_and_several_paragraphs():
    text = ("# a comment\nTypes: deb\nURIs: http://a/\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n"
            " abc\n\n\nTypes: deb-src\nURIs: http://b/\n")
    assert _apt.deb822_paragraphs(text) == [
        {"Types": "deb", "URIs": "http://a/", "Signed-By": "\n-----BEGIN PGP PUBLIC KEY BLOCK-----\n.\nabc"},
        {"Types": "deb-src", "URIs": "http://b/"}]
    assert _apt.deb822_paragraphs("") == [] and _apt.deb822_paragraphs("# only a comment\n") == []
