# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _host_state: files compared by content or by sha1, units read from systemctl."""

from __future__ import annotations

import os

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _files
from ansible_collections.volta.serving.plugins.module_utils import _host_state as hs


@pytest.fixture
def existing(tmp_path):
    path = tmp_path / "keys.conf"
    path.write_bytes(b"secret\n")
    path.chmod(0o640)
    st = os.lstat(path)
    return {"path": str(path), "mode": "0640", "owner": "x", "group": "y"}, st, st.st_uid, st.st_gid


def test_same_sha1_no_change(existing):
    want, st, uid, gid = existing
    assert hs.file_changes(dict(want, sha1=_files.sha1(b"secret\n")), st, b"secret\n", uid, gid) == []


def test_other_sha1_is_a_content_change(existing):
    want, st, uid, gid = existing
    assert hs.file_changes(dict(want, sha1=_files.sha1(b"new\n")), st, b"secret\n", uid, gid) == ["content"]


def test_sha1_and_mode(existing):
    want, st, uid, gid = existing
    changes = hs.file_changes(dict(want, sha1=_files.sha1(b"new\n"), mode="0600"), st, b"secret\n", uid, gid)
    assert changes == ["content", "mode 0640 -> 0600"]


def test_by_content(existing):
    want, st, uid, gid = existing
    assert hs.file_changes(dict(want, content="secret\n"), st, b"secret\n", uid, gid) == []
    assert hs.file_changes(dict(want, content="x\n"), st, b"secret\n", uid, gid) == ["content"]


def test_absent_file():
    want = {"path": "/nowhere", "mode": "0600", "owner": "root", "group": "root", "sha1": "0" * 40}
    assert hs.file_changes(want, None, None, 0, 0) == ["created"]
    assert hs.file_changes(dict(want, state="absent"), None, None, 0, 0) == []


def test_units():
    out = hs.units(["nginx.service", "ufw.service"], "active\ninactive\n", "enabled\nnot-found\n")
    assert out == {"nginx.service": {"active": True, "enabled": True},
                   "ufw.service": {"active": False, "enabled": False}}
