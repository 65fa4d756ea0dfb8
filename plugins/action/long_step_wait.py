# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.long_step_wait: wait for an async job, printing its progress.

Documented in plugins/modules/long_step_wait.py.
"""

from __future__ import annotations

import shlex
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.volta.serving.plugins.plugin_utils import _step_faults as faults
from ansible_collections.volta.serving.plugins.plugin_utils._progress import last_line, progress

display = Display()


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("jid", "log", "step", "timeout", "interval", "report_every", "space_path", "index_urls",
                             "finish"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _valid, args = self.validate_argument_spec(
            argument_spec={
                "jid": {"type": "str", "required": True},
                "log": {"type": "str", "default": ""},
                "step": {"type": "str", "required": True},
                "timeout": {"type": "int", "default": 3600},
                "interval": {"type": "float", "default": 2.0},
                "report_every": {"type": "float", "default": 30.0},
                "space_path": {"type": "str", "default": ""},
                "index_urls": {"type": "list", "elements": "str", "default": []},
                "finish": {"type": "bool", "default": False},
            },
        )
        host = (task_vars or {}).get("inventory_hostname", "host")
        async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        start = last_report = time.monotonic()
        while True:
            status = self._execute_module(
                module_name="ansible.legacy.async_status",
                module_args={"jid": args["jid"], "mode": "status", "_async_dir": async_dir},
                task_vars=task_vars,
            )
            now = time.monotonic()
            if status.get("finished") or status.get("failed"):
                break
            if now - start > args["timeout"]:
                status = {"failed": True, "msg": f"{args['step']} did not finish in {args['timeout']} s"}
                break
            if now - last_report >= args["report_every"]:
                display.display(progress(host, args["step"], now - start, self._tail(args["log"])))
                last_report = now
            time.sleep(args["interval"])
        result.update(status)
        result.update(changed=False, elapsed=round(time.monotonic() - start, 1), step=args["step"])
        if status.get("finished") and status.get("rc", 0) != 0:
            result["problem"] = self._problem(host, args)
        if args["finish"]:
            self._finish(result, args, async_dir, task_vars)
        return result

    def _finish(self, result, args, async_dir, task_vars):
        """finish: the job's status file removed, and a step that did not end with exit status 0 failed with
        its problem, its exit status (or why it has none) and the last 40 lines of its log."""
        self._execute_module(
            module_name="ansible.legacy.async_status",
            module_args={"jid": args["jid"], "mode": "cleanup", "_async_dir": async_dir},
            task_vars=task_vars,
        )
        rc = result.get("rc")
        if rc == 0:
            result["failed"] = False
            return
        out = self._low_level_execute_command(f"tail -n 40 {shlex.quote(args['log'])}") if args["log"] else {}
        lines = out.get("stdout", "").splitlines() if out.get("rc") == 0 else []
        why = f"exit status {rc}" if rc is not None else result.get("msg") or "no result"
        result["failed"] = True
        result["msg"] = (f"{result.get('problem') or ''} {args['step']} failed ({why}); the last lines of "
                         f"{args['log']}: {' | '.join(lines)}")

    def _problem(self, host, args):
        """A full disk or an unreachable index, read from the failed step's log; '' for anything else."""
        if not args["log"]:
            return ""
        out = self._low_level_execute_command(f"tail -c 16384 {shlex.quote(args['log'])}")
        text = out.get("stdout", "") if out.get("rc") == 0 else ""
        kind = faults.classify(text)
        if kind == "disk" and args["space_path"]:
            path = shlex.quote(args["space_path"])
            free, mount = faults.parse_df(self._low_level_execute_command(f"df -P -B1 {path}").get("stdout", ""))
            written = faults.parse_du(self._low_level_execute_command(f"du -sxB1 {path}").get("stdout", ""))
            return faults.disk_full_message(host, args["step"], args["space_path"], written, free, mount,
                                            faults.cause(text, kind))
        if kind == "index" and args["index_urls"]:
            return faults.index_unreachable_message(host, args["step"], faults.failing_index(text, args["index_urls"]),
                                                    faults.cause(text, kind))
        return ""

    def _tail(self, path):
        if not path:  # a step without a log (a module's download): the progress line gives the time only
            return None
        out = self._low_level_execute_command(f"tail -c 4096 {shlex.quote(path)}")
        return last_line(out.get("stdout", "")) if out.get("rc") == 0 else ""
