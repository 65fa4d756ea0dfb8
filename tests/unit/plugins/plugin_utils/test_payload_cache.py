# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_payload_cache.py (the store of volta.serving.payload_cache)."""

from __future__ import annotations

import os
import shutil

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _payload_cache as pc

OURS = "ansible_collections.volta.serving.plugins.modules.files-ZIP_DEFLATED-none"
CORE = "ansible.modules.setup-ZIP_DEFLATED-none"


def _tree(top, files):
    for name, content in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return top


@pytest.fixture
def sources(tmp_path):
    modules = _tree(tmp_path / "src" / "modules", {"files.py": "A = 1\n", "sub/ping.py": "B = 2\n"})
    utils = _tree(tmp_path / "src" / "module_utils", {"_files.py": "C = 3\n"})
    return [("modules", modules), ("module_utils", utils)]


def test_the_key_follows_every_source_file_and_the_version(sources):
    key = pc.source_key("2.19.14", sources)
    assert pc.source_key("2.19.14", sources) == key
    assert pc.source_key("2.19.15", sources) != key
    modules = sources[0][1]
    (modules / "files.py").write_text("A = 2\n")
    edited = pc.source_key("2.19.14", sources)
    assert edited != key
    (modules / "new.py").write_text("")
    added = pc.source_key("2.19.14", sources)
    assert added not in (key, edited)
    (modules / "new.py").unlink()
    assert pc.source_key("2.19.14", sources) == edited
    # a file moved from one tree to the other is another source layout
    (modules / "files.py").rename(sources[1][1] / "files.py")
    assert pc.source_key("2.19.14", sources) != edited


def test_the_key_ignores_compiled_files(sources):
    key = pc.source_key("2.19.14", sources)
    modules = sources[0][1]
    (modules / "__pycache__").mkdir()
    (modules / "__pycache__" / "files.cpython-311.pyc").write_bytes(b"\0")
    (modules / "stale.pyc").write_bytes(b"\0")
    assert pc.source_key("2.19.14", sources) == key


def test_the_same_files_elsewhere_or_as_another_kind_of_source_are_another_key(sources, tmp_path):
    key = pc.source_key("2.19.14", sources)
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "src", moved)
    assert pc.source_key("2.19.14", [("modules", moved / "modules"), ("module_utils", moved / "module_utils")]) != key
    assert pc.source_key("2.19.14", [("module_utils", sources[0][1]), ("modules", sources[1][1])]) != key


@pytest.mark.parametrize(("name", "expected"), [
    (OURS, True),
    (CORE, True),
    ("ansible.legacy.my_module-ZIP_DEFLATED-none", False),  # a role's library/: not covered by the key
    ("ansible_collections.community.docker.plugins.modules.docker_container-ZIP_DEFLATED-none", False),
    (OURS + ".lock", False),
    (CORE + "-part", False),
    (".part-x1y2", False),
])
def test_only_entries_of_the_keyed_sources_are_kept(name, expected):
    assert pc.kept(name) is expected


def test_a_missing_store_is_made_for_this_user_alone(tmp_path):
    root = tmp_path / "cache" / "payloads"
    assert pc.usable_store(str(root)) is None
    assert (root.stat().st_mode & 0o777) == 0o700


def test_a_store_others_can_write_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.mkdir()
    root.chmod(0o777)
    assert pc.usable_store(str(root)) == f"{root} can be written by other users (mode 0777)"
    root.chmod(0o750)
    assert pc.usable_store(str(root)) is None


def test_a_store_that_is_a_file_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.write_text("")
    assert pc.usable_store(str(root)).startswith(f"cannot create {root}: ")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the store to another user needs root")
def test_a_store_of_another_user_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    assert pc.usable_store(str(root)) == f"{root} belongs to another user (uid 65534)"


def test_a_run_stores_its_new_entries_and_the_next_run_gets_them(tmp_path):
    root, first, second = tmp_path / "store", tmp_path / "run1", tmp_path / "run2"
    root.mkdir()
    assert pc.restore(str(root), "k1", str(first)) == []
    _tree(first, {OURS: "ours", CORE: "core", OURS + ".lock": "", "ansible.legacy.x-ZIP_DEFLATED-none": "legacy"})
    assert pc.store(str(root), "k1", str(first)) == [CORE, OURS]
    assert sorted(os.listdir(root / "k1")) == [CORE, OURS]
    # a second store of the same entries copies nothing
    assert pc.store(str(root), "k1", str(first)) == []
    # the next run of the same key gets both; an entry the run already has is left as it is
    _tree(second, {CORE: "built in this run"})
    assert pc.restore(str(root), "k1", str(second)) == [OURS]
    assert (second / OURS).read_text() == "ours"
    assert (second / CORE).read_text() == "built in this run"
    # another key sees nothing of it
    assert pc.restore(str(root), "k2", str(tmp_path / "run3")) == []


def test_a_store_removes_other_keys_left_unused_for_two_weeks(tmp_path):
    root, run = tmp_path / "store", _tree(tmp_path / "run", {OURS: "ours"})
    for key in ("old", "recent", "current"):
        _tree(root / key, {CORE: key})
    now = 1_800_000_000
    os.utime(root / "old", (now, now - pc.STALE_SECONDS - 60))
    os.utime(root / "recent", (now, now - pc.STALE_SECONDS + 60))
    os.utime(root / "current", (now, now - pc.STALE_SECONDS - 60))
    pc.store(str(root), "current", str(run), now=now)
    assert sorted(os.listdir(root)) == ["current", "recent"]
    assert sorted(os.listdir(root / "current")) == [CORE, OURS]


def test_a_restore_marks_its_key_as_used(tmp_path):
    root = tmp_path / "store"
    _tree(root / "k1", {CORE: "core"})
    os.utime(root / "k1", (1, 1))
    pc.restore(str(root), "k1", str(tmp_path / "run"))
    assert (root / "k1").stat().st_mtime > 1_000_000_000
