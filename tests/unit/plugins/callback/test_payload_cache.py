# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/callback/payload_cache.py in real ansible-playbook runs (local connection): the first run builds
and keeps the module payloads, the next one builds none (ansible-core's own debug lines say which it did);
a store someone else could have changed is never used, and a crafted entry in it never runs."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.callback import payload_cache

REPO = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
PING = "ansible.modules.ping-ZIP_DEFLATED-none"
ENTRIES = [PING, "ansible_collections.volta.serving.plugins.modules.files-ZIP_DEFLATED-none"]
# ansible-core's debug lines (ansible/executor/module_common.py) for a payload built and one read back.
BUILT = "ANSIBALLZ: Creating module"
REUSED = "ANSIBALLZ: using cached module"
ROOT_FIX = ("Fix: set VOLTA_SERVING_PAYLOAD_CACHE to a directory of your own that no other user can write (not a "
            "symbolic link), or leave volta.serving.payload_cache out of callbacks_enabled.")


def _run(tmp, store, playbook, debug=True, marker=None):
    """The output of a run, which must pass; with *marker*, a crafted entry's marker must not exist first."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp / "tmp"), "ANSIBLE_CALLBACKS_ENABLED": "volta.serving.payload_cache",
           "VOLTA_SERVING_PAYLOAD_CACHE": str(store), "ANSIBLE_DEBUG": "1" if debug else "0"}  # fmt: skip
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), str(playbook), "-i", "localhost,", "-c", "local", "-vvv",
                           "-e", f"ansible_python_interpreter={sys.executable}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert marker is None or not marker.exists(), "a crafted pickle of the store ran"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _playbook(tmp):
    tasks = [{"name": "Ping", "ansible.builtin.ping": {"data": "pong-1"}, "register": "__ping"},
             {"name": "Make a directory", "volta.serving.files": {"directories": [{"path": str(tmp / "made")}]}},
             {"name": "Show", "ansible.builtin.debug": {"msg": "ping={{ __ping.ping }}"}}]
    path = tmp / "play.yml"
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    return path


def _key():
    return payload_cache._payload_cache.source_key(payload_cache.ansible_version, payload_cache.SOURCES)


class _Crafted:
    """A pickle that writes *marker* when it is loaded: what an attacker would put in place of an entry."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


@pytest.fixture(scope="module")
def kept_store(tmp_path_factory):
    """A store one run filled (ping and files), copied by each test that needs one."""
    tmp = tmp_path_factory.mktemp("kept")
    store = tmp / "store"
    _run(tmp, store, _playbook(tmp), debug=False)
    return store


def _attack(kept_store, tmp, replace=lambda path: True):
    """A copy of *kept_store* whose files that *replace* picks hold a crafted pickle; (store, key dir, marker)."""
    store, marker = tmp / "store", tmp / "marker"
    shutil.copytree(kept_store, store, symlinks=True)
    key_dir = store / _key()
    for folder, _subfolders, names in os.walk(key_dir):
        for name in names:
            path = Path(folder) / name
            if replace(path):
                path.write_bytes(pickle.dumps(_Crafted(marker)))
    return store, key_dir, marker


def _warning(out):
    return " ".join(out.split())


def test_the_next_run_builds_no_payload_the_first_one_kept(tmp_path):
    store, playbook = tmp_path / "store", _playbook(tmp_path)
    first = _run(tmp_path, store, playbook)
    assert first.count(BUILT) == 2 and REUSED not in first
    assert "0 module payload(s) from" in first and "2 new module payload(s) kept in" in first
    (key,) = os.listdir(store)
    assert key == _key()
    assert sorted(os.listdir(store / key)) == ENTRIES
    for entry in ENTRIES:
        assert sorted(os.listdir(store / key / entry)) == ["manifest.json", "payload.zip"]
        assert (store / key / entry / "payload.zip").read_bytes()[:4] == b"PK\x03\x04"  # a zip, not a pickle
    second = _run(tmp_path, store, playbook)
    assert BUILT not in second and second.count(REUSED) == 2
    assert "2 module payload(s) from" in second and "0 new module payload(s) kept in" in second
    assert "ping=pong-1" in second


def test_a_store_others_can_write_is_not_used_and_the_run_goes_on(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o777)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False)
    expected = f"volta.serving.payload_cache: not used, {store} can be written by other users (mode 0777). {ROOT_FIX}"
    assert expected in _warning(out)
    assert "ping=pong-1" in out
    assert os.listdir(store) == []


def test_a_crafted_pickle_in_a_key_directory_others_can_write_never_runs(kept_store, tmp_path):
    store, key_dir, marker = _attack(kept_store, tmp_path)
    key_dir.chmod(0o770)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False, marker=marker)
    assert (f"volta.serving.payload_cache: not used, {key_dir} can be written by other users (mode 0770). "
            f"Fix: remove {key_dir} (the next run builds its payloads again and keeps them).") in _warning(out)
    assert "ping=pong-1" in out


@pytest.mark.skipif(os.geteuid() != 0, reason="giving an entry to another user needs root")
def test_a_crafted_pickle_in_an_entry_of_another_user_never_runs(kept_store, tmp_path):
    store, key_dir, marker = _attack(kept_store, tmp_path)
    for folder, _subfolders, names in os.walk(key_dir):
        for name in names:
            os.chown(Path(folder) / name, 65534, 65534)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False, marker=marker)
    manifest = key_dir / PING / "manifest.json"
    assert (f"volta.serving.payload_cache: not used, {manifest} belongs to another user (uid 65534). "
            f"Fix: remove {key_dir} (the next run builds its payloads again and keeps them).") in _warning(out)
    assert "ping=pong-1" in out


def test_a_replaced_payload_that_does_not_match_its_manifest_is_refused(kept_store, tmp_path):
    store, key_dir, marker = _attack(kept_store, tmp_path, replace=lambda path: path.name != "manifest.json")
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False, marker=marker)
    zip_path = key_dir / PING / "payload.zip"
    assert f"volta.serving.payload_cache: not used, {zip_path} does not match its manifest (sha256 " in _warning(out)
    assert f"Fix: remove {key_dir} (the next run builds its payloads again and keeps them)." in _warning(out)
    assert "ping=pong-1" in out


def test_a_symlinked_store_is_not_used(tmp_path):
    real, store = tmp_path / "real", tmp_path / "store"
    real.mkdir(mode=0o700)
    store.symlink_to(real)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False)
    assert f"volta.serving.payload_cache: not used, {store} is a symbolic link. {ROOT_FIX}" in _warning(out)
    assert "ping=pong-1" in out
    assert os.listdir(real) == []


def test_a_symlinked_entry_is_refused_and_never_runs(kept_store, tmp_path):
    store, key_dir, marker = _attack(kept_store, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (key_dir / PING).rename(elsewhere)
    (key_dir / PING).symlink_to(elsewhere)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False, marker=marker)
    assert (f"volta.serving.payload_cache: not used, {key_dir / PING} is a symbolic link. "
            f"Fix: remove {key_dir} (the next run builds its payloads again and keeps them).") in _warning(out)
    assert "ping=pong-1" in out


def test_an_entry_turns_into_ansible_cores_form_and_back():
    fields = {"serialization_profile": "legacy", "source_mapping": {"/src/ping.py": "ansible/modules/ping.py"}}
    raw = payload_cache.encode(fields, b"PK\x03\x04zip")
    entry = pickle.loads(raw)  # noqa: S301  the bytes encode() just made, as ansible-core reads them
    assert isinstance(entry, payload_cache.module_common._CachedModule)
    assert entry.zip_data == b"UEsDBHppcA==" and entry.metadata.serialization_profile == "legacy"
    assert payload_cache.decode(raw) == (fields, b"PK\x03\x04zip")


def test_reading_the_runs_own_entries_loads_no_other_class(tmp_path):
    marker = tmp_path / "marker"
    assert payload_cache.decode(pickle.dumps(_Crafted(marker))) is None
    assert not marker.exists()
    assert payload_cache.decode(b"not a pickle") is None
    assert payload_cache.decode(pickle.dumps({"zip_data": b""})) is None
