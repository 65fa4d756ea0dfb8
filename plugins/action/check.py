# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.check: ansible.builtin.assert, with the failure message rendered only on failure.

Documented in plugins/modules/check.py. ansible.builtin.assert renders every argument before it tests the
conditions, so its fail_msg costs a rendering of the variables it names (often the same list of problems that
the condition has just rendered) on every run, also when nothing fails. Here fail_msg (or its alias msg) is
kept as written until a condition is false; everything else is ansible.builtin.assert's own code.
"""

from __future__ import annotations

import importlib

# "assert" is a keyword, so the builtin action's module is imported by its name.
_builtin_assert = importlib.import_module("ansible.plugins.action.assert")

LAZY_ARGS = frozenset(("fail_msg", "msg"))


class ActionModule(_builtin_assert.ActionModule):
    @classmethod
    def finalize_task_arg(cls, name, value, templar, context):
        if name in LAZY_ARGS:
            return value
        return super().finalize_task_arg(name, value, templar, context)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if result.get("failed") and "assertion" in result:
            message = self._templar.template(result["msg"])
            try:
                result["msg"] = _builtin_assert.str_or_list_of_str(message)
            except TypeError:
                # A rendered value may be a tagged subclass of int, dict, ...: name the builtin type.
                kind = next(c.__name__ for c in type(message).__mro__ if c.__module__ == "builtins")
                result["msg"] = f"fail_msg rendered to {kind}, not a string or a list of strings"
        return result
