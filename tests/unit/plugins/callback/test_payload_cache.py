# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/callback/payload_cache.py in real ansible-playbook runs (local connection): the first run builds
and keeps the module payloads, the next one builds none (ansible-core's own debug lines say which it did)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from ansible_collections.volta.serving.plugins.callback import payload_cache

REPO = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
ENTRIES = ["ansible.modules.ping-ZIP_DEFLATED-none",
           "ansible_collections.volta.serving.plugins.modules.files-ZIP_DEFLATED-none"]
# ansible-core's debug lines (ansible/executor/module_common.py) for a payload built and one read back.
BUILT = "ANSIBALLZ: Creating module"
REUSED = "ANSIBALLZ: using cached module"


def _run(tmp, store, playbook, debug=True):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp / "tmp"), "ANSIBLE_CALLBACKS_ENABLED": "volta.serving.payload_cache",
           "VOLTA_SERVING_PAYLOAD_CACHE": str(store), "ANSIBLE_DEBUG": "1" if debug else "0"}  # fmt: skip
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), str(playbook), "-i", "localhost,", "-c", "local", "-vvv",
                           "-e", f"ansible_python_interpreter={sys.executable}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _playbook(tmp):
    tasks = [{"name": "Ping", "ansible.builtin.ping": {"data": "pong-1"}, "register": "__ping"},
             {"name": "Make a directory", "volta.serving.files": {"directories": [{"path": str(tmp / "made")}]}},
             {"name": "Show", "ansible.builtin.debug": {"msg": "ping={{ __ping.ping }}"}}]
    path = tmp / "play.yml"
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    return path


def test_the_next_run_builds_no_payload_the_first_one_kept(tmp_path):
    store, playbook = tmp_path / "store", _playbook(tmp_path)
    first = _run(tmp_path, store, playbook)
    assert first.count(BUILT) == 2 and REUSED not in first
    assert "0 module payload(s) from" in first and "2 new module payload(s) kept in" in first
    (key,) = os.listdir(store)
    assert key == payload_cache._payload_cache.source_key(payload_cache.ansible_version, payload_cache.SOURCES)
    assert sorted(os.listdir(store / key)) == ENTRIES
    second = _run(tmp_path, store, playbook)
    assert BUILT not in second and second.count(REUSED) == 2
    assert "2 module payload(s) from" in second and "0 new module payload(s) kept in" in second
    assert "ping=pong-1" in second


def test_a_store_others_can_write_is_not_used_and_the_run_goes_on(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o777)
    out = _run(tmp_path, store, _playbook(tmp_path), debug=False)
    expected = (f"volta.serving.payload_cache: not used, {store} can be written by other users (mode 0777); set "
                "VOLTA_SERVING_PAYLOAD_CACHE to a directory of your own, or leave volta.serving.payload_cache out of "
                "callbacks_enabled")
    assert expected in " ".join(out.split())
    assert "ping=pong-1" in out
    assert os.listdir(store) == []
