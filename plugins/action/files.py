# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.files: render the files given as templates on the controller, then run the module.

Documentation: plugins/modules/files.py. A file given with O(files[].template) (a name in the role's
templates/, as for ansible.builtin.template) and O(files[].template_vars) is rendered here with the
task's variables plus template_vars, through ansible.builtin.template's own lookup (the same search
path and ansible_managed), and reaches the module as O(files[].content): one round trip to the host
for all of a role's files, each unit file rendered for its own instance.
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _render(self, entry, task_vars):
        if "template" not in entry or entry.get("template") is None:
            return entry
        if entry.get("content") is not None:
            raise AnsibleActionFail(f"{entry.get('path')}: give content or template, not both")
        out = {k: v for k, v in entry.items() if k not in ("template", "template_vars")}
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        rendered = lookup.run([entry["template"]], variables=task_vars, template_vars=entry.get("template_vars") or {})
        if not rendered:
            raise AnsibleActionFail(f"{entry.get('path')}: template {entry['template']} not found")
        out["content"] = rendered[0]
        return out

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        args["files"] = [self._render(dict(entry), task_vars) if isinstance(entry, dict) else entry
                         for entry in args.get("files") or []]
        result.update(self._execute_module(module_name="volta.serving.files", module_args=args, task_vars=task_vars))
        return result
