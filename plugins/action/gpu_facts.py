# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.gpu_facts: runs the module, waiting first for a host that does not answer.

Documentation: plugins/modules/gpu_facts.py. With connect_wait > 0 a connection failure (the host does not
answer) is tried again every second, with the connection reset, until the host answers or connect_wait seconds
have passed; the task then fails with unreachable_after. preflight's first read of a host is so also its check
that the host answers, without a call of its own. With connect_wait 0 the module runs once, as without the plugin.
"""

from __future__ import annotations

import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

MODULE = "volta.serving.gpu_facts"


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    # Seconds between two attempts; a clock and a sleep that the unit tests replace.
    pause = 1
    clock = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        given = args.pop("connect_wait", 0)
        try:
            wait = int(given)
        except (TypeError, ValueError):
            wait = -1
        if wait < 0:
            return {**result, "failed": True, "msg": f"connect_wait {given!r} is not a number of seconds (0 or more)."}
        result.update(self._read(args, task_vars, wait))
        return result

    def _read(self, args, task_vars, wait):
        """The module's result; with *wait*, after retrying a host that does not answer for that long."""
        deadline = self.clock() + wait
        while True:
            try:
                return self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
            except AnsibleConnectionFailure as exc:
                if wait <= 0:
                    raise
                error = str(exc)
            if self.clock() >= deadline:
                return {"failed": True, "unreachable_after": wait,
                        "msg": f"timed out waiting {wait} s for the host to answer: {error}"}
            self.sleep(self.pause)
            self._reset_connection(task_vars)

    def _reset_connection(self, task_vars):
        """Start the next attempt afresh: a new connection, and interpreter discovery again if it ran."""
        if self._discovered_interpreter_key:
            (task_vars.get("ansible_facts") or {}).pop(self._discovered_interpreter_key, None)
        reset = getattr(self._connection, "reset", None)
        if reset is not None:
            reset()
