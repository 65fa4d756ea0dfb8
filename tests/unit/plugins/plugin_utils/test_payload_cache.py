# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_payload_cache.py (the store of volta.serving.payload_cache)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _payload_cache as pc

OURS = "ansible_collections.volta.serving.plugins.modules.files-ZIP_DEFLATED-none"
CORE = "ansible.modules.setup-ZIP_DEFLATED-none"
FIELDS = {"serialization_profile": "legacy", "source_mapping": {"/src/files.py": "ansible_collections/x/files.py"}}


def _tree(top, files):
    for name, content in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return top


def encode(fields, data):
    """A stand-in for ansible-core's form of an entry: the fields as a JSON line, then the zip."""
    return json.dumps(fields, sort_keys=True).encode() + b"\n" + data


def decode(raw):
    if raw.startswith(b"skip"):
        return None
    head, data = raw.split(b"\n", 1)
    return json.loads(head), data


def _run_dir(top, entries):
    """A run's payload cache holding *entries* ({name: zip bytes}) in the stand-in form."""
    top.mkdir(parents=True, exist_ok=True)
    for name, data in entries.items():
        (top / name).write_bytes(encode(FIELDS, data))
    return top


@pytest.fixture
def sources(tmp_path):
    modules = _tree(tmp_path / "src" / "modules", {"files.py": "A = 1\n", "sub/ping.py": "B = 2\n"})
    utils = _tree(tmp_path / "src" / "module_utils", {"_files.py": "C = 3\n"})
    return [("modules", modules), ("module_utils", utils)]


@pytest.fixture
def kept_store(tmp_path):
    """A store whose key k1 holds CORE and OURS; (root, key directory)."""
    root = tmp_path / "store"
    assert pc.store(str(root), "k1", str(_run_dir(tmp_path / "run0", {CORE: b"core-zip", OURS: b"ours-zip"})),
                    decode) == [CORE, OURS]
    return root, root / "k1"


def _refused(root, key="k1", run_dir=None):
    with pytest.raises(pc.Refused) as refused:
        pc.restore(str(root), key, str(run_dir or os.path.join(os.path.dirname(root), "run-refused")), encode)
    return refused.value


def test_the_key_follows_every_source_file_the_version_and_the_format(sources, monkeypatch):
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
    moved = pc.source_key("2.19.14", sources)
    assert moved != edited
    # a store of another layout (the pickles of format 1) is never read
    monkeypatch.setattr(pc, "FORMAT", 1)
    assert pc.source_key("2.19.14", sources) != moved


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
    assert pc.restore(str(root), "k1", str(tmp_path / "run"), encode) == []
    assert (root.stat().st_mode & 0o777) == 0o700


def test_a_run_keeps_its_entries_as_zips_with_manifests_and_the_next_run_gets_them(tmp_path):
    root = tmp_path / "store"
    first = _run_dir(tmp_path / "run1", {OURS: b"ours-zip", CORE: b"core-zip", "ansible.legacy.x-ZIP_DEFLATED-none":
                                         b"legacy", OURS + ".lock": b""})
    assert pc.restore(str(root), "k1", str(first), encode) == []
    assert pc.store(str(root), "k1", str(first), decode) == [CORE, OURS]
    assert sorted(os.listdir(root / "k1")) == [CORE, OURS]
    entry = root / "k1" / OURS
    assert sorted(os.listdir(entry)) == ["manifest.json", "payload.zip"]
    assert (entry / "payload.zip").read_bytes() == b"ours-zip"
    assert json.loads((entry / "manifest.json").read_text()) == {
        "format": 2, "entry": OURS, "zip_sha256": hashlib.sha256(b"ours-zip").hexdigest(), "zip_size": 8, **FIELDS}
    assert {oct(p.stat().st_mode & 0o777) for p in (root / "k1", entry, entry / "payload.zip")} == {"0o700", "0o600"}
    # a second store of the same entries keeps nothing
    assert pc.store(str(root), "k1", str(first), decode) == []
    # the next run of the same key gets both; an entry the run already has is left as it is
    second = _run_dir(tmp_path / "run2", {CORE: b"built in this run"})
    assert pc.restore(str(root), "k1", str(second), encode) == [OURS]
    assert (second / OURS).read_bytes() == encode(FIELDS, b"ours-zip")
    assert (second / CORE).read_bytes() == encode(FIELDS, b"built in this run")
    # another key sees nothing of it
    assert pc.restore(str(root), "k2", str(tmp_path / "run3"), encode) == []


def test_an_entry_the_decoder_does_not_know_or_a_linked_run_entry_is_not_kept(tmp_path):
    run = _run_dir(tmp_path / "run", {OURS: b"ours-zip"})
    (run / CORE).write_bytes(b"skip: not ansible-core's form")
    (run / "ansible.modules.ping-ZIP_DEFLATED-none").symlink_to(run / OURS)
    assert pc.store(str(tmp_path / "store"), "k1", str(run), decode) == [OURS]


def test_a_partial_entry_of_another_run_is_left_alone(kept_store, tmp_path, monkeypatch):
    root, key_dir = kept_store
    (key_dir / ".part-0123").mkdir(mode=0o700)
    assert pc.restore(str(root), "k1", str(tmp_path / "run"), encode) == [CORE, OURS]
    # one renamed into place between the listing and its check is left for the next run
    listdir, calls = os.listdir, []

    def listed_with_a_gone_partial(fd):  # the first listing is the key's directory
        calls.append(fd)
        return listdir(fd) + ([".part-gone"] if len(calls) == 1 else [])

    monkeypatch.setattr(pc.os, "listdir", listed_with_a_gone_partial)
    assert pc.restore(str(root), "k1", str(tmp_path / "run2"), encode) == [CORE, OURS]


def test_a_store_others_can_write_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.mkdir()
    root.chmod(0o777)
    refused = _refused(root)
    assert str(refused) == f"{root} can be written by other users (mode 0777)"
    assert refused.fix == pc.ROOT_FIX
    root.chmod(0o750)
    assert pc.restore(str(root), "k1", str(tmp_path / "run"), encode) == []


def test_a_store_that_is_a_file_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.write_text("")
    assert str(_refused(root)) == f"{root} is not a directory"


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_store_is_refused(tmp_path, dangling):
    real, root = tmp_path / "real", tmp_path / "payloads"
    if not dangling:
        real.mkdir(mode=0o700)
    root.symlink_to(real)
    assert str(_refused(root)) == f"{root} is a symbolic link"
    assert str(_refused(f"{root}/")) == f"{root} is a symbolic link"
    with pytest.raises(pc.Refused, match="is a symbolic link"):
        pc.store(str(root), "k1", str(_run_dir(tmp_path / "run", {OURS: b"z"})), decode)
    assert not real.exists() or os.listdir(real) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the store to another user needs root")
def test_a_store_of_another_user_is_refused(tmp_path):
    root = tmp_path / "payloads"
    root.mkdir(mode=0o700)
    os.chown(root, 65534, 65534)
    assert str(_refused(root)) == f"{root} belongs to another user (uid 65534)"


def _group_writable(path):
    path.chmod(path.stat().st_mode | 0o020)


def _symlinked(path):
    moved = path.parent.parent / f"moved-{path.name}"
    shutil.move(path, moved)
    path.symlink_to(moved)


@pytest.mark.parametrize(("change", "relative", "why"), [
    (_group_writable, "", "can be written by other users (mode 0720)"),
    (_group_writable, CORE, "can be written by other users (mode 0720)"),
    (_group_writable, f"{CORE}/payload.zip", "can be written by other users (mode 0620)"),
    (_symlinked, "", "is a symbolic link"),
    (_symlinked, CORE, "is a symbolic link"),
    (_symlinked, f"{CORE}/payload.zip", "is a symbolic link"),
    (lambda path: path.unlink() or os.mkfifo(path, 0o600), f"{CORE}/payload.zip", "is not a regular file"),
    (lambda path: path.write_bytes(b"crafted"), f"{CORE}/payload.zip",
     f"does not match its manifest (sha256 {hashlib.sha256(b'crafted').hexdigest()}, 7 bytes; manifest.json says "
     f"{hashlib.sha256(b'core-zip').hexdigest()}, 8 bytes)"),
    (lambda path: path.write_text("{"), f"{CORE}/manifest.json",
     "is not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    (lambda path: path.write_text(path.read_text().replace('"legacy"', "7")), f"{CORE}/manifest.json",
     f"is not a manifest of format 2 for {CORE}"),
    (lambda path: path.unlink(), f"{CORE}/payload.zip", None),
    (lambda path: (path / "run.py").write_text(""), CORE, None),
])
def test_a_changed_entry_refuses_the_whole_store(kept_store, tmp_path, change, relative, why):
    root, key_dir = kept_store
    path = key_dir / relative if relative else key_dir
    change(path)
    run = tmp_path / "run"
    refused = _refused(root, run_dir=run)
    if why is None:  # an entry holding other files than its zip and manifest
        assert str(refused).startswith(f"{key_dir / CORE} holds ")
        assert str(refused).endswith(", not manifest.json and payload.zip")
    else:
        assert str(refused) == f"{path} {why}"
    assert refused.fix == f"remove {key_dir} (the next run builds its payloads again and keeps them)"
    assert not run.exists() or os.listdir(run) == []  # nothing of the store was put, not even the good entry
    with pytest.raises(pc.Refused):
        pc.store(str(root), "k1", str(_run_dir(tmp_path / "run2", {"ansible.modules.ping-ZIP_DEFLATED-none": b"z"})),
                 decode)
    assert "ansible.modules.ping-ZIP_DEFLATED-none" not in os.listdir(key_dir)


def test_an_entry_under_another_name_or_a_stray_file_is_refused(kept_store):
    root, key_dir = kept_store
    shutil.copytree(key_dir / CORE, key_dir / "ansible.modules.ping-ZIP_DEFLATED-none")
    assert str(_refused(root)) == (f"{key_dir / 'ansible.modules.ping-ZIP_DEFLATED-none' / 'manifest.json'} is not a "
                                   "manifest of format 2 for ansible.modules.ping-ZIP_DEFLATED-none")
    shutil.rmtree(key_dir / "ansible.modules.ping-ZIP_DEFLATED-none")
    (key_dir / "stray.pickle").mkdir(mode=0o700)
    assert str(_refused(root)) == f"{key_dir / 'stray.pickle'} is not an entry of this cache"
    (key_dir / "stray.pickle").rmdir()
    (key_dir / "stray.pickle").write_bytes(b"")
    assert str(_refused(root)) == f"{key_dir / 'stray.pickle'} is not a directory"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving an entry to another user needs root")
@pytest.mark.parametrize("relative", ["", CORE, f"{CORE}/manifest.json"])
def test_an_entry_of_another_user_is_refused(kept_store, relative):
    root, key_dir = kept_store
    path = key_dir / relative if relative else key_dir
    os.chown(path, 65534, 65534)
    assert str(_refused(root)) == f"{path} belongs to another user (uid 65534)"


def test_a_store_removes_other_keys_left_unused_for_two_weeks(tmp_path):
    root, run = tmp_path / "store", _run_dir(tmp_path / "run", {OURS: b"ours"})
    for key in ("old", "recent", "current"):
        (root / key).mkdir(parents=True, mode=0o700)
    (root / "linked").symlink_to(tmp_path / "run")
    now = 1_800_000_000
    os.utime(root / "old", (now, now - pc.STALE_SECONDS - 60))
    os.utime(root / "recent", (now, now - pc.STALE_SECONDS + 60))
    os.utime(root / "current", (now, now - pc.STALE_SECONDS - 60))
    os.utime(root / "linked", (now, now - pc.STALE_SECONDS - 60), follow_symlinks=False)
    pc.store(str(root), "current", str(run), decode, now=now)
    assert sorted(os.listdir(root)) == ["current", "linked", "recent"]
    assert os.listdir(root / "current") == [OURS]
    assert sorted(os.listdir(run)) == [OURS]  # a link in the store is never followed


def test_a_restore_marks_its_key_as_used(kept_store, tmp_path):
    root, key_dir = kept_store
    os.utime(key_dir, (1, 1))
    pc.restore(str(root), "k1", str(tmp_path / "run"), encode)
    assert key_dir.stat().st_mtime > 1_000_000_000


def test_an_entry_another_run_kept_first_is_left_as_it_is(kept_store, tmp_path):
    _root, key_dir = kept_store
    run = _run_dir(tmp_path / "run", {CORE: b"built by a run that ended later"})
    key_fd = os.open(key_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert pc._keep_entry(key_fd, CORE, str(run / CORE), decode) is False
    finally:
        os.close(key_fd)
    assert sorted(os.listdir(key_dir)) == [CORE, OURS]  # no partial entry left behind
    assert (key_dir / CORE / "payload.zip").read_bytes() == b"core-zip"
