# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _files: what volta.serving.files would change, from lstat results and bytes."""

from __future__ import annotations

import os
import stat

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _files


def st(mode, uid=0, gid=0):
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))


WANT = {"path": "/etc/x.conf", "content": b"x\n", "owner": "root", "group": "adm", "mode": "0640"}


@pytest.mark.parametrize("current, lstat, changes", [
    (None, None, ["created"]),
    (b"x\n", st(stat.S_IFREG | 0o640, 0, 4), []),
    (b"y\n", st(stat.S_IFREG | 0o640, 0, 4), ["content"]),
    (b"x\n", st(stat.S_IFREG | 0o644, 0, 4), ["mode 0644 -> 0640"]),
    (b"x\n", st(stat.S_IFREG | 0o640, 1000, 0), ["owner 1000 -> root", "group 0 -> adm"]),
])
def test_file_changes(current, lstat, changes):
    assert _files.file_changes(WANT, lstat, current, 0, 4) == changes


def test_absent_file():
    gone = dict(WANT, state="absent")
    assert _files.file_changes(gone, None, None, 0, 4) == []
    assert _files.file_changes(gone, st(stat.S_IFREG | 0o600), b"x", 0, 4) == ["removed"]
    # A link is removed itself (Debian's nginx default site); a directory is still refused.
    assert _files.file_changes(gone, st(stat.S_IFLNK | 0o777), None, 0, 4) == ["removed"]
    with pytest.raises(ValueError, match=r"^/etc/x\.conf is a directory; this task writes plain files only$"):
        _files.file_changes(gone, st(stat.S_IFDIR | 0o755), None, 0, 4)


@pytest.mark.parametrize("mode, words", [(stat.S_IFDIR | 0o755, "a directory"), (stat.S_IFLNK | 0o777, "a link")])
def test_file_refuses_other_kinds(mode, words):
    with pytest.raises(ValueError, match=f"^/etc/x.conf is {words}; this task writes plain files only$"):
        _files.file_changes(WANT, st(mode), None, 0, 4)


def test_directory_changes():
    want = {"path": "/etc/volta", "owner": "root", "group": "root", "mode": "0755"}
    assert _files.directory_changes(want, None, 0, 0) == ["created"]
    assert _files.directory_changes(want, st(stat.S_IFDIR | 0o755), 0, 0) == []
    assert _files.directory_changes(want, st(stat.S_IFDIR | 0o700), 0, 0) == ["mode 0700 -> 0755"]
    with pytest.raises(ValueError, match=r"^/etc/volta exists and is not a directory"):
        _files.directory_changes(want, st(stat.S_IFREG | 0o644), 0, 0)


def test_diffs():
    assert _files.file_diff(WANT, b"y\n", []) is None
    assert _files.file_diff(WANT, b"y\n", ["content"])["before"] == "y\n"
    secret = _files.file_diff(dict(WANT, secret=True), b"y\n", ["content"])
    assert (secret["before"], secret["after"]) == (_files.SECRET_DIFF, _files.SECRET_DIFF)
    assert _files.file_diff(dict(WANT, state="absent"), b"y\n", ["removed"])["after"] == ""


@pytest.mark.parametrize("mode", ["644x", "", "01234", "8"])
def test_bad_modes(mode):
    with pytest.raises(ValueError, match="is not an octal mode such as '0644'"):
        _files._mode(mode)


def test_validate_argv():
    assert _files.validate_argv("nginx -t -c %s", "/tmp/f") == ["nginx", "-t", "-c", "/tmp/f"]
    assert _files.validate_argv("sh -c x=%s", "/tmp/f") == ["sh", "-c", "x=/tmp/f"]
    with pytest.raises(ValueError, match="has no %s"):
        _files.validate_argv("nginx -t", "/tmp/f")
