"""fault_at: the lab's fault injector, a test-only callback for the fault scenarios (tests/ only).

A fault scenario's side_effect runs ansible-playbook with this callback enabled
(ANSIBLE_CALLBACK_PLUGINS pointing at this directory, ANSIBLE_CALLBACKS_ENABLED naming
volta.serving.gc_freeze and fault_at) and says, in the environment, where the fault comes:

  VOLTA_FAULT_TASK    text that the task's name contains (the first task matching it triggers, once)
  VOLTA_FAULT_WHEN    "start" (when the task starts) or "ok" (when a host's result is ok or changed);
                      default "start"
  VOLTA_FAULT_CMD     a shell command run on the controller at that moment (for example a
                      `docker restart` of a lab host, or a filler that takes a disk's last bytes);
                      the callback waits for it unless VOLTA_FAULT_DETACH is "true"
  VOLTA_FAULT_KILL    "true": after the command, ansible-playbook kills itself with SIGKILL, as when an
                      operator's laptop dies: no handler, no rescue and no cleanup runs on the
                      controller (a task worker still running ends on its own; with one host and
                      VOLTA_FAULT_WHEN "ok" none is)
  VOLTA_FAULT_MARK    a file the callback writes the time and the task's name to when it triggers, so
                      the side_effect can assert that the fault really happened where it meant

Nothing here is known to the roles: the fault comes from outside, as on a real server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: fault_at
type: aggregate
short_description: the lab's fault injector (tests only)
description: Runs VOLTA_FAULT_CMD, and may kill the controller, when the task VOLTA_FAULT_TASK starts or ends.
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fault_at"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._task = os.environ.get("VOLTA_FAULT_TASK", "")
        self._when = os.environ.get("VOLTA_FAULT_WHEN", "start")
        if self._when not in ("start", "ok"):
            raise ValueError(f"VOLTA_FAULT_WHEN is {self._when!r}: give start or ok")
        self._fired = not self._task

    def _matches(self, task):
        return not self._fired and self._task in (task.get_name() or "")

    def _fire(self, task):
        self._fired = True
        mark = os.environ.get("VOLTA_FAULT_MARK")
        if mark:
            with open(mark, "w", encoding="utf-8") as out:
                out.write(f"{time.time():.3f} {self._when} {task.get_name()}\n")
        command = os.environ.get("VOLTA_FAULT_CMD")
        if command:
            self._display.display(f"fault_at: running {command!r} at {self._when} of {task.get_name()!r}")
            if os.environ.get("VOLTA_FAULT_DETACH") == "true":
                subprocess.Popen(["sh", "-c", command], start_new_session=True)
            else:
                subprocess.run(["sh", "-c", command], check=False)
        if os.environ.get("VOLTA_FAULT_KILL") == "true":
            self._display.display(f"fault_at: killing the controller at {self._when} of {task.get_name()!r}")
            os.kill(os.getpid(), signal.SIGKILL)

    def v2_playbook_on_task_start(self, task, is_conditional):
        if self._when == "start" and self._matches(task):
            self._fire(task)

    def v2_runner_on_ok(self, result):
        if self._when == "ok" and self._matches(result._task):
            self._fire(result._task)
