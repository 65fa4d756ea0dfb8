# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/callback/gc_freeze.py."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import types
import weakref
from pathlib import Path

from ansible_collections.volta.serving.plugins.callback import gc_freeze


class Node:
    me = None


def test_play_start_freezes_what_the_controller_holds_and_collects_first():
    gc.unfreeze()
    held = [Node() for count in range(10)]
    garbage = Node()
    garbage.me = garbage  # a cycle nothing refers to: collected before the freeze, never frozen
    gone = weakref.ref(garbage)
    del garbage
    try:
        gc_freeze.CallbackModule().v2_playbook_on_play_start(None)
        assert gone() is None
        assert gc.get_freeze_count() > len(held)
    finally:
        gc.unfreeze()


def test_enabled_by_name_only():
    plugin = gc_freeze.CallbackModule
    assert plugin.CALLBACK_NEEDS_ENABLED is True
    assert plugin.CALLBACK_TYPE == "aggregate"
    assert sorted(name for name in vars(plugin) if name.startswith("v2_")) == [
        "v2_playbook_on_play_start", "v2_runner_on_start"]


PROBE = Path(__file__).with_name("preload_probe.py")
COLLECTIONS = Path(__file__).resolve().parents[4] / "collections"


def probe(*actions):
    """What the callback loads in a fresh controller process: at play start, then at the start of *actions*."""
    run = subprocess.run([sys.executable, str(PROBE), str(COLLECTIONS), *actions], capture_output=True,
                         text=True, check=True)
    # the callback prints nothing, and a plugin it cannot load costs no warning (the worker gives the error)
    assert "WARNING" not in run.stderr.replace("CryptographyDeprecationWarning", "")
    assert "ERROR" not in run.stderr
    return json.loads(run.stdout)


def test_play_start_loads_the_builtin_tests_and_the_default_connections_before_any_worker_forks():
    loaded = probe()
    assert {"ansible/plugins/test/core.py", "ansible/plugins/test/files.py", "ansible/plugins/connection/ssh.py",
            "ansible/plugins/connection/local.py"} <= set(loaded["play"])
    assert loaded["tasks"] == []


def test_task_start_loads_its_action_plugin_its_own_or_normal_and_skips_what_cannot_be_loaded():
    loaded = probe("ansible.builtin.assert", "volta.serving.long_step_wait")
    tasks = set(loaded["tasks"])
    assert "ansible/plugins/action/assert.py" in tasks
    assert "ansible_collections/community/docker/plugins/connection/docker.py" in tasks
    assert "ansible_collections/volta/serving/plugins/action/long_step_wait.py" in tasks
    # what the action plugin imports comes with it
    assert "ansible_collections/volta/serving/plugins/plugin_utils/_progress.py" in tasks
    # a module without an action plugin of its own runs through ansible.builtin.normal
    assert "ansible/plugins/action/normal.py" not in tasks
    assert "ansible/plugins/action/normal.py" in set(probe("ansible.builtin.apt")["tasks"])
    # an action nothing resolves fails in its worker, as without the callback; here it only costs normal's load
    assert "ansible/plugins/action/normal.py" in set(probe("volta.serving.no_such_module")["tasks"])


def test_task_start_tries_each_action_once_per_run(monkeypatch):
    calls = []
    monkeypatch.setattr(gc_freeze, "_load", lambda loader, name, **kwargs: calls.append(name))
    monkeypatch.setattr(gc_freeze.module_loader, "find_plugin_with_context",
                        lambda name, **kwargs: calls.append(name))
    callback = gc_freeze.CallbackModule()
    task = types.SimpleNamespace(action="volta.serving.no_such_module", collections=[])
    try:
        callback.v2_runner_on_start(None, task)
        first = len(calls)
        callback.v2_runner_on_start(None, task)
    finally:
        gc.unfreeze()
    assert first == 3  # the module's resolution, its action plugin by name, then normal
    assert len(calls) == first
