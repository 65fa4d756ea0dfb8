# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.api_keys: the API key of every instance of a host, and the files that carry them.

Documentation: plugins/modules/api_keys.py. The key settings are api_gateway's variables; this action reads them
from the host's variables (as volta.serving.serving_plan reads its inputs), so the internal role _api_keys takes
only the plan's instances from its caller. Its result holds keys: the action hides it (no_log) itself,
but for its refusal, which names instances only.
"""

from __future__ import annotations

import base64

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

# The host's variables this action reads, each with its owner's default (roles/api_gateway/defaults/main.yml).
READS = {
    "keys": "api_gateway_keys | default({})",
    "host_key": "api_gateway_host_key | default('')",
    "generate": "api_gateway_generate_keys | default(false) | bool",
    "group": "api_gateway_key_group | default('')",
    "volta_instances": "volta_instances | default([])",
}


def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _api_keys

    return _api_keys


def _generated(results):
    """Key owner -> key, from the slurp results of the generated keys (loop item: the owner)."""
    out = {}
    for entry in results or []:
        if isinstance(entry, dict) and entry.get("content") and entry.get("item"):
            out[entry["item"]] = to_text(base64.b64decode(entry["content"])).strip()
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def _read(self, task_vars):
        templar = self._templar.copy_with_new_env(available_variables=task_vars)
        out = {}
        for name, expression in READS.items():
            try:
                out[name] = templar.evaluate_expression(trust_as_template(expression))
            except Exception as exc:
                raise AnsibleActionFail(f"api_keys: cannot read {expression.split(' ', maxsplit=1)[0]}: "
                                        f"{type(exc).__name__}") from None
        out["keys"] = {str(k): (str(v) if v else "") for k, v in dict(out["keys"] or {}).items()}
        out["host_key"] = str(out["host_key"] or "")
        return out

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        # The result holds keys: hidden whatever the task says; a refusal names instances only, and is shown.
        result["_ansible_no_log"] = True
        logic = _logic()
        args = self._task.args
        instances = [dict(i) for i in args.get("instances") or []]
        secrets_dir = str(args.get("secrets_dir") or "")
        if instances and not secrets_dir:
            raise AnsibleActionFail("api_keys: secrets_dir is required (the plan's secrets_dir)")
        settings = self._read(task_vars)
        group = str(settings["group"] or args.get("service_group") or "")
        if not group:
            raise AnsibleActionFail("api_keys: no group for the key files (api_gateway_key_group, or service_group)")
        to_generate = logic.to_generate(instances, settings["keys"], settings["host_key"], settings["generate"])
        generated_given = args.get("generated") is not None
        resolved = logic.resolve(instances, settings["keys"], settings["host_key"],
                                 _generated(args.get("generated")))
        result.update(changed=False, to_generate=to_generate, group=group, keys={}, files=[],
                      directories=logic.directories(instances, secrets_dir, group),
                      manifest=logic.manifest(instances, secrets_dir))
        if to_generate and not generated_given:
            return result  # the keys are resolved by the call after their generation
        bad = logic.bad(instances, resolved, to_generate if self._play_context.check_mode else ())
        if bad:
            result.update(failed=True, msg=logic.bad_message(task_vars.get("inventory_hostname"), bad),
                          _ansible_no_log=False)
            return result
        from ansible_collections.volta.serving.plugins.filter.systemd_quote import systemd_env_file

        result["keys"] = resolved
        result["files"] = logic.key_files(instances, resolved, logic.secret_envs(settings["volta_instances"]),
                                          group, systemd_env_file)
        return result
