"""task_times: where a bench run's time goes, per task and per role task file (bench/ only).

Enabled by bench/benchlib.py for its ansible-playbook runs (ANSIBLE_CALLBACK_PLUGINS pointing here,
VOLTA_BENCH_TIMES=FILE). Writes FILE as JSON: every task with its wall time (first host start to last
host result) and, per host, how many results were ok / changed / skipped. With VOLTA_BENCH_CGROUP=DIR
(a cgroup directory, v2 or v1 cpuacct, that holds ansible-playbook and nothing else), each task also
gets the CPU seconds that cgroup used from the task's start to the next task's: the controller's CPU
per task when one host runs (its workers, templating, callbacks and connection clients; not the host's
own processes). The stdout callback is unchanged.
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
        cgroup = os.environ.get("VOLTA_BENCH_CGROUP")
        self._cgroup = cgroup or None

    def _cpu(self):
        """CPU seconds of the cgroup so far (v2 cpu.stat usage_usec, v1 cpuacct.usage), None without one."""
        if self._cgroup is None:
            return None
        v1 = os.path.join(self._cgroup, "cpuacct.usage")
        if os.path.exists(v1):
            with open(v1, encoding="utf-8") as fh:
                return int(fh.read()) / 1e9
        with open(os.path.join(self._cgroup, "cpu.stat"), encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        return None

    def _close(self):
        if self._current is not None:
            self._current["seconds"] = round(time.monotonic() - self._current.pop("_began"), 3)
            began_cpu = self._current.pop("_cpu")
            if began_cpu is not None:
                self._current["cpu_seconds"] = round(self._cpu() - began_cpu, 3)
            self._tasks.append(self._current)
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        path = task.get_path() or ""
        self._current = {"name": task.get_name(), "action": task.action,
                         "file": path.rsplit(":", 1)[0].split("/roles/", 1)[-1], "_began": time.monotonic(),
                         "_cpu": self._cpu(), "results": {}}

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
