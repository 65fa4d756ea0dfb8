# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback volta.serving.gc_freeze: less controller CPU per task, no output."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
short_description: Freeze the controller's Python objects and load the task workers' plugins before the workers fork
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Ansible forks one worker process per task and host. In each worker, Python's garbage collector walks the
    objects the worker inherited from the controller process and so writes to their memory pages, which the
    kernel must then copy. At the start of each play this callback runs one collection and moves every object
    the controller holds then into Python's permanent generation (C(gc.freeze())), which the collector never
    walks; the workers then copy fewer pages. It prints nothing and changes no result.
  - In the lab's no-change rerun of C(site.yml) on one host it took about a tenth off the controller's CPU.
  - Objects made after a play starts are collected as usual, so a long run holds no more memory than without it.
  - Each worker also loads, from its files, the plugins its task needs and the controller process has not loaded
    yet, and forgets them when it exits; the next worker loads them again. This callback loads them in the
    controller process instead, once per run, just before the first worker that needs them forks, and the
    workers inherit them loaded. They are the Jinja test plugins of C(ansible.builtin), the connection plugins
    C(ssh) (Ansible's default) and C(local) and the ones a host's inventory entry or its groups' entries name
    (C(ansible_connection); a C(group_vars) file is not read here),
    and for each task the action plugin that runs it (the module's own, else C(ansible.builtin.normal)) and the
    module's name resolution. What a task does and returns is unchanged;
    a plugin that cannot be loaded here is left for the worker, which reports the error as without this callback.
requirements:
  - enable it, for example in C(ansible.cfg) (C(callbacks_enabled = volta.serving.gc_freeze)); this repository's
    C(ansible.cfg) and the lab's molecule configuration do.
"""

import gc

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader, connection_loader, module_loader, test_loader

# Loaded once per run for every task: the builtin Jinja tests (loading one loads the files of all of them) and
# the connection plugins a host or a delegation to the controller uses unless its variables name another.
SHARED = ((test_loader, "version"), (connection_loader, "ssh"), (connection_loader, "local"))
# The action plugin of a module without one of its own.
NORMAL = "ansible.legacy.normal"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "volta.serving.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._shared = False  # SHARED loaded (at the first play's start)
        self._hosts = set()  # the hosts whose inventory connections are loaded
        self._actions = set()  # (action, collections) of the tasks whose action plugin is loaded

    def v2_playbook_on_play_start(self, play):
        if not self._shared:
            self._shared = True
            for loader, name in SHARED:
                _load(loader, name)
        gc.collect()
        gc.freeze()

    def v2_runner_on_start(self, host, task):
        """Load the task's action plugin in the controller process, just before its worker forks."""
        if host is not None and host.name not in self._hosts:
            self._hosts.add(host.name)
            for connection in _inventory_connections(host):
                _load(connection_loader, connection)
        key = (task.action, tuple(task.collections or ()))
        if key in self._actions:
            return
        self._actions.add(key)
        collections = list(key[1]) or None
        try:
            found = module_loader.find_plugin_with_context(task.action, collection_list=collections)
        except Exception:  # the worker resolves it again and reports the error in the task's result
            found = None
        handler = found.action_plugin if found is not None and found.resolved else None
        if not (handler and _load(action_loader, handler, collection_list=collections)):
            if not _load(action_loader, task.action, collection_list=collections):
                _load(action_loader, NORMAL)
        gc.freeze()


def _inventory_connections(host):
    """The connection plugins named by *host*'s inventory entry and its groups' (group_vars files are not read)."""
    entries = [host.get_vars(), *(group.get_vars() for group in host.get_groups())]
    return {entry["ansible_connection"] for entry in entries if isinstance(entry.get("ansible_connection"), str)}


def _load(loader, name, **kwargs):
    """The plugin class *name* of *loader*, None where it cannot be had."""
    try:
        return loader.get(name, class_only=True, **kwargs)
    except Exception:  # the worker loads it again and reports the error in the task's result
        return None
