# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.engine_installs: runs the module, then returns its local fact.

Documentation: plugins/modules/engine_installs.py. The module builds the volta_engines local fact;
this plugin returns it as ansible_facts.ansible_local.volta_engines next to the host's other local
facts (facts are merged one key deep, so a module returning ansible_local alone would drop them),
so that no setup run is needed to read the file just written.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import literal as literal_default


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        if not args.get("root"):
            # The engine role's default root (roles/engine/defaults/main.yml, the one home of the path).
            args["root"] = literal_default("engine", "engine_root")
        result.update(self._execute_module(module_name="volta.serving.engine_installs",
                                           module_args=args, task_vars=task_vars))
        fact = result.pop("volta_engines", None)
        if fact is not None and not result.get("failed"):
            local = dict((task_vars.get("ansible_facts") or {}).get("ansible_local") or {})
            local["volta_engines"] = fact
            result["ansible_facts"] = {"ansible_local": local}
        return result
