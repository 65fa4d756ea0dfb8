"""task_times: where a bench run's time goes, per task and per role task file (bench/ only).

Enabled by bench/benchlib.py for its ansible-playbook runs (ANSIBLE_CALLBACK_PLUGINS pointing here,
VOLTA_BENCH_TIMES=FILE). Writes FILE as JSON: every task with its wall time (first host start to last
host result) and, per host, how many results were ok / changed / skipped. The stdout callback is
unchanged.
"""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_times
type: aggregate
short_description: per-task wall times of a bench run, as JSON
description: Writes the file named by VOLTA_BENCH_TIMES with each task's wall time.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_times"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self):
        super().__init__()
        self._out = os.environ.get("VOLTA_BENCH_TIMES")
        self._tasks = []
        self._current = None

    def _close(self):
        if self._current is not None:
            self._current["seconds"] = round(time.monotonic() - self._current.pop("_began"), 3)
            self._tasks.append(self._current)
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        path = task.get_path() or ""
        self._current = {"name": task.get_name(), "action": task.action,
                         "file": path.rsplit(":", 1)[0].split("/roles/", 1)[-1], "_began": time.monotonic(),
                         "results": {}}

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def _count(self, result, kind):
        if self._current is not None:
            counts = self._current["results"]
            counts[kind] = counts.get(kind, 0) + 1

    def v2_runner_on_ok(self, result):
        self._count(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_skipped(self, result):
        self._count(result, "skipped")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result, "failed")

    def v2_playbook_on_stats(self, stats):
        self._close()
        if self._out:
            with open(self._out, "w", encoding="utf-8") as fh:
                json.dump(self._tasks, fh, indent=0)
