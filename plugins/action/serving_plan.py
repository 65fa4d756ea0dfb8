# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.serving_plan: the serving plan and the V100 rules, on the controller.

Documentation: plugins/modules/serving_plan.py. Never connects to the host: it only reads its
arguments (and the host's variables) and, with dump_dir, writes a JSON file on the controller.
"""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible_collections.volta.serving.plugins.module_utils._plan import (
    DEFAULT_ENGINES_ROOT,
    DEFAULT_SECRETS_DIR,
    build_report,
)

ARGUMENT_SPEC = {
    "server": {"type": "dict", "required": True},
    "instances": {"type": "list", "elements": "dict", "default": []},
    "host": {"type": "str"},
    "driver_branch": {"type": "str", "default": "580"},
    "driver_kernel_module": {"type": "str", "default": "proprietary", "choices": ["proprietary", "open"]},
    "cuda_version": {"type": "str", "default": "12.8"},
    "engine_versions": {"type": "dict", "default": {}},
    "ssh_port": {"type": "int", "default": 22},
    "api_key_instances": {"type": "list", "elements": "str", "default": []},
    "api_host_key": {"type": "bool", "default": False},
    "api_generate_keys": {"type": "bool", "default": False},
    "profiles": {"type": "dict", "default": {}},
    "engines_root": {"type": "str", "default": DEFAULT_ENGINES_ROOT},
    "secrets_dir": {"type": "str", "default": DEFAULT_SECRETS_DIR},
    "reserved_ports": {"type": "dict", "default": {}},
    "build_packages": {"type": "list", "elements": "str"},
    "ram_need_gb": {"type": "dict", "default": {}},
    "gpu_facts": {"type": "dict"},
    "dump_dir": {"type": "path"},
}


def write_dump(dump_dir, host, plan):
    """Write *plan* to <dump_dir>/<host>.json on the controller; return the path."""
    os.makedirs(dump_dir, exist_ok=True)
    path = os.path.join(dump_dir, f"{host}.json")
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(plan, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)
    return path


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp  # never used: nothing is copied to the host

        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        host = args["host"] or task_vars.get("inventory_hostname") or "localhost"
        gpu_facts = args["gpu_facts"]
        if gpu_facts is None:
            gpu_facts = (task_vars.get("ansible_facts") or {}).get("volta_gpu")

        report = build_report(
            host,
            args["server"],
            args["instances"],
            driver_branch=args["driver_branch"],
            driver_kernel_module=args["driver_kernel_module"],
            cuda_version=args["cuda_version"],
            engine_versions=args["engine_versions"],
            ssh_port=args["ssh_port"],
            keyed_instances=args["api_key_instances"],
            host_key=args["api_host_key"],
            generate_keys=args["api_generate_keys"],
            profiles=args["profiles"],
            engines_root=args["engines_root"],
            secrets_dir=args["secrets_dir"],
            reserved_ports=args["reserved_ports"],
            build_packages=args["build_packages"],
            ram_need_gb=args["ram_need_gb"],
            gpu_facts=gpu_facts,
        )

        result.update(
            changed=False,
            plan=report["plan"],
            findings=report["findings"],
            errors=report["errors"],
            warning_count=report["warnings"],
            allowed_count=report["allowed"],
        )
        if args["dump_dir"]:
            try:
                result["dump_file"] = write_dump(args["dump_dir"], host, report["plan"])
            except OSError as exc:
                raise AnsibleActionFail(f"{host}: cannot write the plan to {args['dump_dir']}: {to_text(exc)}") from exc

        printed = [f["message"] for f in report["findings"] if f["severity"] == "warning"]
        printed += [f"ALLOWED ({f['rule']}): {f['message']}" for f in report["findings"] if f["severity"] == "allowed"]
        if printed:
            result["warnings"] = printed
        errors = [f["message"] for f in report["findings"] if f["severity"] == "error"]
        if errors:
            result["failed"] = True
            result["msg"] = f"{host}: {len(errors)} error(s) in the serving plan:\n" + "\n".join(
                f"- {message}" for message in errors
            )
        else:
            result["msg"] = (
                f"{host}: serving plan of {len(report['plan']['instances'])} instance(s): "
                f"no errors, {report['warnings']} warning(s), {report['allowed']} allowed"
            )
        return result
