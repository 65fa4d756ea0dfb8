# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.serving_plan: the serving plan and the V100 rules, on the controller.

Documentation: plugins/modules/serving_plan.py. Never connects to the host: it only reads its
arguments (and the host's variables) and, with dump_dir, writes a JSON file on the controller.

Every argument left out is read from the host's variables with the expression in
VAR_DEFAULTS (the inventory names of volta.serving), declared in the plan's input schema
(plugins/plugin_utils/plan_inputs.yml), so that preflight, engine_service and api_gateway all call it
without arguments and build the same plan: what preflight checked is what the units run. All of them
are read in one expression per call (one Jinja compile), and one at a time only when that fails.
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template
from ansible_collections.volta.serving.plugins.filter.router import router_listen_ports
from ansible_collections.volta.serving.plugins.module_utils._model import (
    ModelError,
    resolve_instances,
)
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import expression as role_default
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import literal as literal_default
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import ours
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report
from ansible_collections.volta.serving.plugins.plugin_utils._plan_inputs import expressions as plan_input_expressions
from ansible_collections.volta.serving.plugins.plugin_utils._plan_inputs import one_expression
from ansible_collections.volta.serving.plugins.plugin_utils._preflight_rules import (
    ENGINE_VERSION_VARS,
    INDEXED,
    RELEASE_RE,
)
from ansible_collections.volta.serving.plugins.plugin_utils._releases import read_releases, urllib_read
from ansible_collections.volta.serving.plugins.plugin_utils._shapes import shape_problems

# No defaults here: an argument left out comes from VAR_DEFAULTS (host variables), whose
# expressions carry the built-in defaults.
ARGUMENT_SPEC = {
    "server": {"type": "dict"},
    "instances": {"type": "list", "elements": "dict"},
    "host": {"type": "str"},
    "driver_branch": {"type": "str"},
    "driver_kernel_module": {"type": "str", "choices": ["proprietary", "open"]},
    "cuda_version": {"type": "str"},
    "engine_versions": {"type": "dict"},
    "ssh_port": {"type": "int"},
    "api_key_instances": {"type": "list", "elements": "str"},
    "api_host_key": {"type": "bool"},
    "api_generate_keys": {"type": "bool"},
    "profiles": {"type": "dict"},
    "engines_root": {"type": "str"},
    "secrets_dir": {"type": "str"},
    "reserved_ports": {"type": "dict"},
    "build_packages": {"type": "list", "elements": "str"},
    "ram_need_gb": {"type": "dict"},
    "gpu_facts": {"type": "dict"},
    "model_facts": {"type": "dict"},
    "host_platform": {"type": "dict"},
    "engine_pythons": {"type": "dict"},
    "python_uv_version": {"type": "str"},
    "onecat_wheel": {"type": "str"},
    "gateway": {"type": "dict"},
    "api_key_sha256": {"type": "dict"},
    "lab": {"type": "bool"},
    "units": {"type": "dict"},
    "models": {"type": "dict"},
    "models_root": {"type": "str"},
    "unknown_variables": {"type": "str"},
    "facts_from": {"type": "str", "choices": ["host", "controller"], "default": "host"},
    "preflight": {"type": "bool", "default": False},
    "index_timeout": {"type": "int", "default": 10},
    "dump_dir": {"type": "path"},
    "report_warnings": {"type": "bool", "default": True},
    "cluster_members": {"type": "dict"},
    "ray_ports": {"type": "dict"},
    "service_home": {"type": "str"},
    "shared": {"type": "dict"},
}

# Where each argument comes from when the task leaves it out: a Jinja expression over the host's
# variables, each declared once in the plan's input schema (plugins/plugin_utils/plan_inputs.yml, section
# arguments; _plan_inputs turns it into these expressions). The one mapping from inventory names to the plan's
# inputs, with the shared section below.
VAR_DEFAULTS = {
    **plan_input_expressions("arguments"),
    # The settings more than one role needs, each read from its one home (its owner role's variable, else
    # that role's default); the plan carries them as plan['shared'], with engines_root (the engine installs'
    # root, an argument of its own), and no role reads another role's variables.
    "shared": "{" + ", ".join(f"{field!r}: ({expression})" for field, expression in (
        # "" unless the inventory names one: the repository of the host's distribution (role _cuda_repo).
        ("cuda_apt_url", "nvidia_driver_cuda_repo_url | default('') | string"),
        ("cuda_keyring_sha256", f"({role_default('nvidia_driver', 'nvidia_driver_cuda_keyring_sha256')}) | string"),
        ("python_index_url", role_default("engine", "engine_pypi_index_url")),
        ("exporters", "{" + ", ".join(f"{key!r}: ({role_default('exporters', 'exporters_' + key)})"
                                      for key in ("listen_address", "port", "node_exporter_port",
                                                  "node_exporter_enabled")) + "}"),
        ("service_account", "{" + ", ".join(f"{key!r}: ({role_default('engine_service', 'engine_service_' + key)})"
                                            for key in ("user", "group", "home")) + "}"),
    )) + "}",
}


def member_inputs(templar, member_vars):
    """What the plan reads of another member of a multi-host instance (_cluster): the schema's member section
    over its variables (each one it does not set is its role's default, over its own variables)."""
    member = templar.copy_with_new_env(available_variables=member_vars)
    read = ActionModule._evaluate_all(member, plan_input_expressions("member"), ActionModule._read_named)
    return {**read, "instances": read["instances"] or [], "models": read["models"] or {}}


# What only preflight's call reads (preflight: true): the driver pin and the index of the engine pins.
PREFLIGHT_VARS = plan_input_expressions("preflight")


# The host variables whose type is checked before any expression reads inside them (a list
# api_gateway_keys made dict2items fail), with the argument that replaces each when given.
SHAPE_VARS = {"volta_server": "server", "volta_instances": "instances", "api_gateway_keys": "api_key_instances",
              "volta_models": "models"}


# The host fact that carries the last plan built for the host, with the digest of its inputs: a later
# layer's call with the same inputs (the same run, nothing changed in between) reuses that report.
CACHE_FACT = "volta_serving_plan"
# Arguments that change what the action does with the report, not the report itself.
NOT_INPUTS = ("dump_dir", "report_warnings", "index_timeout")


def inputs_digest(args):
    """sha256 of the arguments the report is built from (sorted JSON; anything else as its repr)."""
    inputs = {k: v for k, v in args.items() if k not in NOT_INPUTS}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=repr).encode("utf-8")).hexdigest()


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


def interface_addresses(facts):
    """Interface -> its IPv4 address (None without one) from a host's gathered facts; None when the
    network facts were not gathered."""
    names = facts.get("interfaces")
    if not isinstance(names, list):
        return None
    out = {}
    for name in names:
        entry = facts.get(str(name).replace("-", "_")) or {}
        ipv4 = entry.get("ipv4") if isinstance(entry, dict) else None
        out[str(name)] = ipv4.get("address") if isinstance(ipv4, dict) else None
    return out


def not_run_text(skipped):
    """The summary's list of the rules that did not run, and why ("" when every rule ran)."""
    if not skipped:
        return ""
    return f"; not run ({len(skipped)}): " + "; ".join(skipped)


def plan_inputs(host, args, instances, preflight=None):
    """The PlanInputs of _plan.build_report from the action's resolved arguments (argument -> field)."""
    return PlanInputs(
        host,
        args.get("server"),
        instances,
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
        build_packages=args.get("build_packages"),
        ram_need_gb=args["ram_need_gb"],
        gpu_facts=args.get("gpu_facts"),
        model_facts=args.get("model_facts"),
        platform={"host": args.get("host_platform"), "engine_pythons": args.get("engine_pythons"),
                  "uv_python": args.get("python_uv_version"), "onecat_wheel": args.get("onecat_wheel")},
        gateway=args.get("gateway"),
        key_sha256=args.get("api_key_sha256"),
        lab=bool(args.get("lab")),
        units=args.get("units"),
        unknown_mode=args.get("unknown_variables") or "error",
        preflight=preflight,
        model_facts_from=args["facts_from"],
        cluster_members=args.get("cluster_members"),
        ray_ports=args.get("ray_ports"),
        service_home=args.get("service_home"),
        exporters=(args.get("shared") or {}).get("exporters"),
    )


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    @staticmethod
    def _shape_problems(templar, given):
        """One line per host variable of the wrong type (volta_server, volta_instances, api_gateway_keys,
        volta_models)."""
        variables = {name: given[argument] for name, argument in SHAPE_VARS.items()
                     if argument in given and name != "api_gateway_keys"}
        expressions = {name: f"{name} | default(none)"
                       for name, argument in SHAPE_VARS.items() if argument not in given}
        if "host" not in given:
            expressions["host"] = VAR_DEFAULTS["host"]
        read = ActionModule._evaluate_all(templar, expressions, ActionModule._read_raw)
        host = given.get("host") or read.pop("host", None)
        variables.update(read)
        return shape_problems(host, variables)

    @staticmethod
    def _evaluate_all(templar, expressions, read_one):
        """name -> the value of each of *expressions* over the host's variables, in one expression: one Jinja
        compile instead of one per name. When that fails, read_one(templar, name, expression) reads each alone
        (and so lets the first error through, names its input, or makes the value None)."""
        if not expressions:
            return {}
        try:
            return dict(templar.evaluate_expression(trust_as_template(one_expression(expressions))))
        except Exception:
            return {name: read_one(templar, name, expression) for name, expression in expressions.items()}

    @staticmethod
    def _read_raw(templar, _name, expression):
        """The value of *expression*; its error goes through as it is."""
        return templar.evaluate_expression(trust_as_template(expression))

    def _resolve_args(self, task_vars):
        """The task's arguments, each one left out read from the host's variables (VAR_DEFAULTS)."""
        given = {k: v for k, v in self._task.args.items() if v is not None}
        templar = self._templar.copy_with_new_env(available_variables=task_vars)
        problems = self._shape_problems(templar, given)
        if problems:
            raise AnsibleActionFail("\n".join(problems))
        merged = dict(given)
        read = self._read_defaults(templar, [name for name in VAR_DEFAULTS if name not in given])
        merged.update((name, value) for name, value in read.items() if value is not None)
        if "cluster_members" not in merged:
            merged["cluster_members"] = self._cluster_members(task_vars, merged.get("instances") or [])
        if isinstance(merged.get("shared"), dict) and "router_ports" not in merged["shared"]:
            # The ports the fleet router listens on when this host runs it too (group volta_router; else []): the
            # firewall opens them to the API clients' networks. The router's plan reads every host of group volta.
            ports = router_listen_ports(task_vars.get("groups") or {}, task_vars.get("hostvars") or {},
                                        task_vars.get("inventory_hostname", ""))
            merged["shared"] = {**merged["shared"], "router_ports": ports}
        validation = ArgumentSpecValidator(ARGUMENT_SPEC).validate(merged)
        if validation.error_messages:
            raise AnsibleActionFail("serving_plan: " + "; ".join(validation.error_messages))
        return validation.validated_parameters

    @staticmethod
    def _read_defaults(templar, names):
        """The VAR_DEFAULTS of *names* over the host's variables; when one cannot be read, the error names it."""
        return ActionModule._evaluate_all(templar, {name: VAR_DEFAULTS[name] for name in names},
                                          ActionModule._read_named)

    @staticmethod
    def _read_named(templar, name, expression):
        """The value of one VAR_DEFAULTS expression; when it fails, the error names its argument."""
        try:
            return templar.evaluate_expression(trust_as_template(expression))
        except Exception as exc:
            raise AnsibleActionFail(f"serving_plan: cannot read {name} from the host's variables ({expression}): "
                                    f"{to_text(exc)}") from exc

    def _cluster_members(self, task_vars, instances):
        """Member hostname -> what _cluster reads of it, for every member the host's cluster instances name."""
        names = {m for inst in instances if isinstance(inst, dict) and isinstance(inst.get("cluster"), dict)
                 for m in (inst["cluster"].get("members") or []) if isinstance(m, str)}
        hostvars = task_vars.get("hostvars") or {}
        in_play = set(task_vars.get("ansible_play_hosts_all") or [])
        return {name: self._member(hostvars, name, name in in_play, instances) for name in sorted(names)}

    def _member(self, hostvars, name, in_play, instances):
        if name not in hostvars:
            return {"known": False, "in_play": False}
        # The member's own variables, not yet templated (HostVars.raw_get): the schema's expressions template them.
        raw = hostvars.raw_get(name) if hasattr(hostvars, "raw_get") else hostvars[name]
        read = member_inputs(self._templar, raw)
        wanted = {inst.get("name") for inst in instances if isinstance(inst, dict)}
        theirs = [i for i in read["instances"] or [] if isinstance(i, dict)]
        try:
            resolved = resolve_instances([i for i in theirs if i.get("name") in wanted], read["models"] or {},
                                         read["models_root"] or literal_default("model", "model_root"))
        except ModelError:
            resolved = [i for i in theirs if i.get("name") in wanted]  # the member's own preflight says why
        facts = hostvars[name].get("ansible_facts") or {}
        return {
            "known": True,
            "in_play": in_play,
            "instances": {i.get("name"): i for i in resolved},
            "server": read["server"] if isinstance(read["server"], dict) else {},
            "engine": read["engine"] or {},
            "interfaces": interface_addresses(facts),
            "clusters": sorted(i.get("name") for i in theirs if isinstance(i.get("cluster"), dict)),
        }

    @staticmethod
    def _evaluate(templar, expression):
        """The value of *expression* over the host's variables, or None when it cannot be evaluated."""
        try:
            return templar.evaluate_expression(trust_as_template(expression))
        except Exception:  # a value preflight cannot read is checked by the layer that reads it
            return None

    @staticmethod
    def _pins(args):
        """Engine version variable -> version, for the flavours the host's instances use."""
        used = {inst.get("engine") for inst in args.get("instances") or [] if isinstance(inst, dict)}
        versions = args.get("engine_versions") or {}
        return {variable: str((versions.get(flavour) or {}).get(key))
                for flavour, variables in ENGINE_VERSION_VARS.items() if flavour in used
                for key, variable in variables.items()
                if (versions.get(flavour) or {}).get(key) not in (None, "")}

    def _preflight_inputs(self, task_vars, args):
        """What _preflight_rules.preflight_findings reads: the host's variable names, pins and the index's releases."""
        templar = self._templar.copy_with_new_env(available_variables=task_vars)
        facts = set(task_vars.get("ansible_facts") or {})
        names = sorted(k for k in task_vars if ours(k) and k not in facts)
        sha256_vars = [k for k in names if k.endswith("_sha256")]
        values = self._evaluate_all(templar, {**PREFLIGHT_VARS, **{f"sha256:{k}": k for k in sha256_vars}},
                                    lambda t, _name, expression: self._evaluate(t, expression))
        pins = self._pins(args)
        read = urllib_read(args["index_timeout"])
        releases = {variable: read_releases(values["index_url"], project, read)
                    for variable, project in INDEXED.items()
                    if variable in pins and RELEASE_RE.fullmatch(pins[variable])}
        return {
            "variables": names,
            "driver_version": values["driver_version"],
            "driver_branch": args["driver_branch"],
            "engine_pins": pins,
            "releases": releases,
            "sha256": {k: values[f"sha256:{k}"] for k in sha256_vars},
            "models": args.get("models") or {},
            "hf_endpoint": values["hf_endpoint"],
            "lab": bool(args.get("lab")),
        }

    @staticmethod
    def _instances(args):
        """The instances with each model_source turned into its served path (model)."""
        try:
            return resolve_instances(args["instances"], args.get("models") or {},
                                     args.get("models_root") or literal_default("model", "model_root"))
        except ModelError as exc:
            raise AnsibleActionFail(f"{args.get('host') or 'localhost'}: serving_plan: {exc}") from exc

    def _build(self, host, args, preflight=None):
        """The report of the V100 rules and the plan (_plan.build_report) from the resolved arguments."""
        return build_report(plan_inputs(host, args, self._instances(args), preflight))

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp  # never used: nothing is copied to the host

        args = self._resolve_args(task_vars)
        host = args.get("host") or "localhost"

        report, result["reused"], facts = self._report(host, args, task_vars)
        result.update(changed=False, errors=report["errors"], warning_count=report["warnings"],
                      allowed_count=report["allowed"], skipped_rules=report.get("skipped", []))
        if args.get("dump_dir"):
            try:
                result["dump_file"] = write_dump(args["dump_dir"], host, report["plan"])
            except OSError as exc:
                raise AnsibleActionFail(f"{host}: cannot write the plan to {args['dump_dir']}: {to_text(exc)}") from exc
        printed = [f["message"] for f in report["findings"] if f["severity"] == "warning"]
        printed += [f"ALLOWED ({f['rule']}): {f['message']}" for f in report["findings"] if f["severity"] == "allowed"]
        if printed and args["report_warnings"]:
            result["warnings"] = printed
        if report["errors"]:
            # The errors only: the plan and the findings (a few hundred lines) would bury them.
            return self._failed(result, host, report)
        result.update(plan=report["plan"], findings=report["findings"])
        if facts:
            result["ansible_facts"] = facts
        result["msg"] = (
            f"{host}: serving plan of {len(report['plan']['instances'])} instance(s): "
            f"no errors, {report['warnings']} warning(s), {report['allowed']} allowed"
            + not_run_text(report.get("skipped"))
        )
        return result

    def _report(self, host, args, task_vars):
        """``(report, reused, facts)``: the cached report when the inputs are unchanged, else a new one."""
        digest = inputs_digest(args)
        cached = task_vars.get("ansible_facts", {}).get(CACHE_FACT) or {}
        if cached.get("inputs") == digest and not args["preflight"]:
            return cached["report"], True, None
        preflight = self._preflight_inputs(task_vars, args) if args["preflight"] else None
        report = self._build(host, args, preflight)
        report["plan"]["shared"] = dict(args.get("shared") or {}, engines_root=args["engines_root"])
        return report, False, {CACHE_FACT: {"inputs": digest, "report": report}}

    @staticmethod
    def _failed(result, host, report):
        errors = [f["message"] for f in report["findings"] if f["severity"] == "error"]
        result["failed"] = True
        result["error_rules"] = [f["rule"] for f in report["findings"] if f["severity"] == "error"]
        result["msg"] = (f"{host}: {len(errors)} error(s) in the serving plan:\n"
                         + "\n".join(f"- {message}" for message in errors)
                         + not_run_text(report.get("skipped")))
        return result
