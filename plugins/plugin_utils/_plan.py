# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan of a V100 host: what each engine instance runs, exactly.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection
(leading underscore): no compatibility promise outside volta.serving.

``build_report(PlanInputs(...))`` is the entry point: it normalises ``volta_instances`` (``_normalize``;
defaults come from a per-engine Volta *profile*, ``_profiles``), checks them with the rules of the registry
``_rules`` and renders (``_render``), for every instance, the unit name, ports, ``CUDA_VISIBLE_DEVICES``, the
exact argv and the environment. The same plan is what the units role renders later, so what preflight
checks is what runs. The API key is never in the plan's argv or env: vLLM reads ``VLLM_API_KEY`` from a
root-only ``EnvironmentFile``, llama.cpp gets ``--api-key-file``; the plan names those files.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.volta.serving.plugins.module_utils._services import listeners, plan_services
from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import parse_version
from ansible_collections.volta.serving.plugins.plugin_utils import _defaults
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import (
    cluster_findings,
    join_cluster,
    not_run,
    ray_plan,
    ray_unit,
)
from ansible_collections.volta.serving.plugins.plugin_utils._example_keys import check_example_keys
from ansible_collections.volta.serving.plugins.plugin_utils._findings import ALLOWED, ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._gateway import check_gateway
from ansible_collections.volta.serving.plugins.plugin_utils._health_rules import check_gpu_health
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import (
    check_engines_root,
    check_secrets_dir,
    check_server_inputs,
)
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import mode_finding, soften
from ansible_collections.volta.serving.plugins.plugin_utils._model_rules import check_models, infer_families
from ansible_collections.volta.serving.plugins.plugin_utils._normalize import normalize_instance
from ansible_collections.volta.serving.plugins.plugin_utils._preflight_rules import preflight_findings
from ansible_collections.volta.serving.plugins.plugin_utils._profiles import (
    DEFAULT_SECRETS_DIR,
    MANAGED_ENV,
    MANAGED_FLAGS,
    is_int,
    is_number,
    merge_profiles,
)
from ansible_collections.volta.serving.plugins.plugin_utils._render import plan_instance
from ansible_collections.volta.serving.plugins.plugin_utils._rules import apply_allow, check_instance
from ansible_collections.volta.serving.plugins.plugin_utils._rules_engine import check_managed
from ansible_collections.volta.serving.plugins.plugin_utils._rules_host import check_gpu_facts, check_gpus, check_ram
from ansible_collections.volta.serving.plugins.plugin_utils._rules_serving import check_ports, check_services
from ansible_collections.volta.serving.plugins.plugin_utils._rules_software import check_platform, check_software
from ansible_collections.volta.serving.plugins.plugin_utils._skipped import controller_model_facts, skipped
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import ENGINES
from ansible_collections.volta.serving.plugins.plugin_utils._units import check_start_limit, unit_sandbox
from ansible_collections.volta.serving.plugins.plugin_utils._vllm_cli import check_flags


@dataclasses.dataclass
class PlanInputs:
    """What build_report reads of one host: the serving_plan action builds it from the host's variables.

    *server*, *instances*: volta_server and volta_instances. Pins and paths left None are the roles'
    defaults (``default_settings``). *keyed_instances*: the instances with a key in api_gateway_keys;
    *host_key*, *generate_keys*: api_gateway_host_key set, api_gateway_generate_keys.
    *unknown_mode*: volta_unknown_variables (``warn`` makes unknown variables and fields warnings).
    *preflight*: the controller-side inputs of ``_preflight_rules.preflight_findings`` (preflight only).
    *model_facts* (the ``volta_checkpoints`` fact of volta.serving.model_facts) turns on the model rules of
    ``_model_rules``; without it they do not run. *model_facts_from*: ``controller`` when *model_facts* were
    read on the controller (paths not there are not missing, they were not read); the report's ``skipped``
    lists the rules that did not run and why. *platform* (optional) feeds the platform rules: ``host``
    (``distribution``, ``version``, ``glibc``, ``note``; None when the host's platform is not known at all),
    ``engine_pythons`` (engine -> explicit interpreter), ``uv_python`` and ``onecat_wheel``.
    *gateway*: the api_gateway settings that reach nginx (``_gateway.GATEWAY_KEYS``), or None.
    *key_sha256*: where each configured key is set -> its sha256 (never the keys); *lab*: volta_lab.
    *units*: engine_service's restart_sec, start_limit_interval and start_limit_burst (``_units``).
    *cluster_members*: what the other members of a multi-host instance have (``_cluster``); *ray_ports*:
    engine_service_ray_ports; *service_home*: engine_service_home (Ray's temp dir is under it).
    *exporters*: the exporters' listen_address, port, node_exporter_port and node_exporter_enabled (the plan's
    shared exporters), against which the instances' ports are checked.
    """

    host: str
    server: object
    instances: object
    driver_branch: str | None = None
    driver_kernel_module: str | None = None
    cuda_version: str | None = None
    engine_versions: dict | None = None
    ssh_port: object = 22
    keyed_instances: object = ()
    host_key: bool = False
    generate_keys: bool = False
    profiles: dict | None = None
    engines_root: str | None = None
    secrets_dir: str = DEFAULT_SECRETS_DIR
    reserved_ports: dict | None = None
    build_packages: list | None = None
    ram_need_gb: dict | None = None
    gpu_facts: dict | None = None
    model_facts: dict | None = None
    platform: dict | None = None
    gateway: dict | None = None
    key_sha256: dict | None = None
    lab: bool = False
    units: dict | None = None
    unknown_mode: str = "error"
    preflight: dict | None = None
    model_facts_from: str = "host"
    cluster_members: dict | None = None
    ray_ports: dict | None = None
    service_home: str | None = None
    exporters: dict | None = None


def _cc_tuple(value):
    version = parse_version(value)
    if not version:
        return None
    return version[:2] if len(version) >= 2 else (*version, 0)


def _host_inputs(host, server, instances):
    """``(server, instances, findings)``: the two host variables, or empty ones with a finding each."""
    findings = []
    if not isinstance(server, dict):
        findings.append(
            finding(
                "missing-field",
                host,
                None,
                "volta_server",
                "volta_server is not set or not a mapping.",
                "every rule needs the host's GPUs.",
                f"describe the machine in host_vars/{host}.yml (gpu_model, gpu_count, compute_capability, "
                "nvlink_islands, ram_gb).",
            )
        )
        server = {}
    if not isinstance(instances, list):
        findings.append(
            finding(
                "invalid-value",
                host,
                None,
                "volta_instances",
                "volta_instances is not a list.",
                "it lists the engine instances of the host.",
                "write volta_instances as a list of mappings.",
            )
        )
        instances = []
    return server, instances, findings


def _islands(host, server):
    """``(islands, findings)``: volta_server.nvlink_islands as a list of GPU lists."""
    islands = server.get("nvlink_islands") or []
    if isinstance(islands, list) and all(isinstance(i, list) and all(is_int(g) for g in i) for i in islands):
        return islands, _islands_range(host, islands, server.get("gpu_count"))
    return [], [
        finding(
            "invalid-value",
            host,
            None,
            "volta_server.nvlink_islands",
            f"nvlink_islands {islands!r} is not a list of lists of GPU indexes.",
            "TP groups are checked against the NVLink islands.",
            "write it as [[0, 1, 2, 3], [4, 5, 6, 7]] or [] for PCIe only.",
        )
    ]


def _islands_range(host, islands, gpu_count):
    """An ``invalid-value`` finding for each NVLink island that names a GPU the host does not have."""
    if not (is_int(gpu_count) and gpu_count >= 1):
        return []  # the shape check refuses the count itself
    return [
        finding(
            "invalid-value",
            host,
            None,
            "volta_server.nvlink_islands",
            f"nvlink_islands[{index}] {island!r} names GPU {', '.join(str(g) for g in bad)}, but the host has "
            f"{gpu_count} GPUs (indexes 0-{gpu_count - 1}).",
            "TP groups are checked against the NVLink islands; an island with a GPU that is not there makes "
            "that check compare with the wrong board.",
            f"list only GPU indexes 0-{gpu_count - 1} (nvidia-smi topo -m shows the NVLink groups), or correct "
            "volta_server.gpu_count.",
        )
        for index, island in enumerate(islands)
        for bad in [[g for g in island if not 0 <= g < gpu_count]]
        if bad
    ]


def _context(host, server, islands, settings):
    """What the rules read about the host: its GPUs, RAM, ports, keys, driver, CUDA and engine pins."""
    gpu_count, ram_gb, ssh_port = server.get("gpu_count"), server.get("ram_gb"), settings["ssh_port"]
    pins = settings["engine_versions"] or {}
    return {
        "host": host,
        "cc": _cc_tuple(server.get("compute_capability")),
        "cc_text": str(server.get("compute_capability", "")),
        "islands": islands,
        # A count below 1 is refused by the shape check (_shapes); no GPU range is derived from it.
        "gpu_count": gpu_count if is_int(gpu_count) and gpu_count >= 1 else None,
        "ram_gb": ram_gb if is_number(ram_gb) else None,
        "ssh_port": int(ssh_port) if str(ssh_port).isdigit() else None,
        "keyed_instances": set(settings["keyed_instances"] or ()),
        "host_key": bool(settings["host_key"]),
        "generate_keys": bool(settings["generate_keys"]),
        "reserved_ports": {
            int(k): str(v) for k, v in (settings["reserved_ports"] or {}).items() if str(k).isdigit()
        },
        "driver_branch": settings["driver_branch"],
        "driver_kernel_module": settings["driver_kernel_module"],
        "cuda_version": settings["cuda_version"],
        "engine_versions": {
            engine: {**_defaults.engine_versions().get(engine, {}), **(pins.get(engine) or {})}
            for engine in ENGINES
        },
        "build_packages": settings["build_packages"],
        "ram_need_gb": settings["ram_need_gb"] or {},
        "cluster_members": settings.get("cluster_members") or {},
        "ray_ports": settings.get("ray_ports") or _defaults.literal("engine_service", "engine_service_ray_ports"),
        "service_home": settings.get("service_home") or _defaults.literal("engine_service", "engine_service_home"),
        "facts_from": settings.get("facts_from") or "host",
        "exporters": settings.get("exporters") or {},
        "gateway_listen": settings.get("gateway_listen") or "",
        **_platform_context(settings),
    }


def _platform_context(settings):
    """What the platform rules read: the host's platform (None: not checked at all) and the interpreters."""
    return {
        "platform": settings.get("host_platform"),
        "engine_pythons": settings.get("engine_pythons") or {},
        "uv_python": settings.get("uv_python") or "",
        "onecat_wheel": settings.get("onecat_wheel") or "",
    }


def _normalise_all(host, instances, profiles):
    """``(normalised instances, findings)``; a name used twice makes the later instance unplannable."""
    normalised, findings, names = [], [], {}
    for index, raw in enumerate(instances):
        inst, inst_findings = normalize_instance(raw, index, host, profiles)
        findings += inst_findings
        if inst is None:
            continue
        if inst["name"] is not None and inst["name"] in names:
            findings.append(
                finding(
                    "duplicate-name",
                    host,
                    inst["name"],
                    "name",
                    f"name {inst['name']} is used by volta_instances[{names[inst['name']]}] and [{index}].",
                    "the name is the systemd unit (volta-<name>.service); two instances would be one unit.",
                    "give every instance of the host its own name.",
                )
            )
            inst["plannable"] = False
        elif inst["name"] is not None:
            names[inst["name"]] = index
        normalised.append(inst)
    return normalised, findings


def _check_all(normalised, ctx, server, gpu_facts):
    """Every rule's findings for the normalised instances of one host, before allow entries apply."""
    findings = []
    checked = [inst for inst in normalised if inst["engine"] is not None]
    for inst in checked:
        findings += check_instance(inst, ctx)
        findings += check_managed(inst, ctx, MANAGED_FLAGS[inst["engine"]], MANAGED_ENV)
        findings += check_flags(inst, ctx)
    findings += check_gpus(normalised, ctx)
    findings += check_ports([inst for inst in normalised if inst["name"]], ctx)
    findings += check_services(normalised, ctx)
    findings += check_software(checked, ctx)
    findings += check_platform(checked, ctx)
    findings += check_ram(checked, ctx)
    findings += check_gpu_facts(gpu_facts, server, ctx)
    findings += check_gpu_health(gpu_facts, server, normalised, ctx)
    ports = [inst[f] for inst in normalised for f in ("port", "backend_port", "service_port") if inst.get(f)]
    for inst in checked:
        if inst.get("cluster"):
            findings += cluster_findings(ctx["host"], inst, ctx["cluster_members"], ctx["ray_ports"], ports,
                                         ctx["facts_from"])
    return findings


def _ray_plan(normalised, ctx, secrets_dir, engines_root):
    """The host's part in a Ray cluster (_cluster.ray_plan), or None: no cluster instance, or one whose
    members' addresses are not all known (its findings already say why)."""
    for inst in normalised:
        cluster = inst.get("cluster")
        if not (inst["plannable"] and inst["enabled"] and cluster and inst["cluster_role"]):
            continue
        members = ctx["cluster_members"]
        if all((members.get(m) or {}).get("interfaces", {}) and members[m]["interfaces"].get(cluster["interface"])
               for m in cluster["members"]):
            plan = ray_plan(ctx["host"], inst, members, ctx["ray_ports"], secrets_dir)
            return ray_unit(plan, engines_root, ctx["service_home"])
    return None


def _plan_entries(normalised, profiles, findings, engines_root, secrets_dir, ray=None):
    """The plan entry of every plannable instance, with the findings allowed for it. A cluster instance
    is planned on its head only (the workers' part is the plan's ``ray``)."""
    entries = []
    for inst in normalised:
        if not inst["plannable"] or inst.get("cluster_role") == "worker":
            continue
        entry = plan_instance(inst, profiles[inst["engine"]], engines_root, secrets_dir)
        if inst.get("cluster_role") == "head" and ray:
            join_cluster(entry, ray)
        entry["allowed"] = [
            {"rule": f["rule"], "reason": f["reason"]}
            for f in findings
            if f["severity"] == ALLOWED and f["instance"] == inst["name"]
        ]
        entries.append(entry)
    return entries


def default_settings():
    """What build_report assumes for a pin or path it is not given: the roles' defaults (their one home)."""
    return {"driver_branch": str(_defaults.literal("nvidia_driver", "nvidia_driver_branch")),
            "driver_kernel_module": _defaults.literal("nvidia_driver", "nvidia_driver_kernel_module"),
            "cuda_version": str(_defaults.literal("cuda_toolkit", "cuda_toolkit_version")),
            "engines_root": _defaults.literal("engine", "engine_root")}


def _settings(inputs, pins):
    """What the rules' context (_context) reads of *inputs*, each pin left out taken from *pins*."""
    return {
        "driver_branch": inputs.driver_branch or pins["driver_branch"],
        "driver_kernel_module": inputs.driver_kernel_module or pins["driver_kernel_module"],
        "cuda_version": inputs.cuda_version or pins["cuda_version"],
        "engine_versions": inputs.engine_versions, "ssh_port": inputs.ssh_port,
        "keyed_instances": inputs.keyed_instances, "host_key": inputs.host_key,
        "generate_keys": inputs.generate_keys, "reserved_ports": inputs.reserved_ports,
        "build_packages": inputs.build_packages, "ram_need_gb": inputs.ram_need_gb,
        "cluster_members": inputs.cluster_members, "ray_ports": inputs.ray_ports,
        "service_home": inputs.service_home, "facts_from": inputs.model_facts_from,
        "exporters": inputs.exporters, "gateway_listen": (inputs.gateway or {}).get("listen_address"),
        **{("host_platform" if k == "host" else k): v for k, v in (inputs.platform or {}).items()},
    }


def build_report(inputs):
    """Check one host's instances (a PlanInputs) and build its plan.

    Returns ``{"host", "plan": {"host", "gateway_ports", "instances": [...], "ray", ...}, "findings": [...],
    "errors", "warnings", "allowed", "skipped"}``. Findings are dicts with rule, severity
    (error|warning|allowed), host, instance (None for host-wide ones), field, message (and reason
    when allowed).
    """
    host, pins = inputs.host, default_settings()
    engines_root = inputs.engines_root or pins["engines_root"]
    server, instances, findings = _host_inputs(host, inputs.server, inputs.instances)
    model_facts, reasons = inputs.model_facts, {}
    if model_facts is not None and inputs.model_facts_from == "controller":
        model_facts, reasons = controller_model_facts(model_facts)
    findings += _input_findings(inputs, server, instances, engines_root)
    profiles, profile_findings = merge_profiles(inputs.profiles, host)
    islands, island_findings = _islands(host, server)
    findings += profile_findings + island_findings
    ctx = _context(host, server, islands, _settings(inputs, pins))
    normalised, instance_findings = _checked_instances(host, instances, profiles, ctx, server, inputs.gpu_facts,
                                                       model_facts)
    findings = soften(findings + instance_findings, inputs.unknown_mode)
    findings = apply_allow(findings, [inst for inst in normalised if inst["name"]], host)
    ray = _ray_plan(normalised, ctx, inputs.secrets_dir, engines_root)
    entries = _plan_entries(normalised, profiles, findings, engines_root, inputs.secrets_dir, ray)
    report = _report(host, server, inputs.secrets_dir, entries, findings)
    report["plan"]["ray"] = ray
    report["skipped"] = (skipped(normalised, model_facts, inputs.gpu_facts, reasons)
                         + not_run(normalised, ctx["cluster_members"], ctx["facts_from"]))
    return report


def _input_findings(inputs, server, instances, engines_root):
    """The findings about the inputs rather than the instances: preflight's own (unknown variables, pins), the
    unknown-variables mode, the host's description, the gateway's settings, the secrets and engines
    directories, the example keys and the units' start limit."""
    host = inputs.host
    findings = []
    if inputs.preflight is not None:
        findings += preflight_findings(host, inputs.preflight, instances, inputs.gateway)
    findings += [f for f in [mode_finding(host, inputs.unknown_mode)] if f]
    return (findings + check_server_inputs(host, server) + check_gateway(host, inputs.gateway)
            + check_secrets_dir(host, inputs.secrets_dir) + check_engines_root(host, engines_root)
            + check_example_keys(host, inputs.key_sha256, inputs.lab) + check_start_limit(host, inputs.units))


def _checked_instances(host, instances, profiles, ctx, server, gpu_facts, model_facts):
    """``(normalised instances, findings)``: each instance normalised, then every rule over all of them."""
    normalised, findings = _normalise_all(host, instances, profiles)
    infer_families(normalised, model_facts)
    findings += _check_all(normalised, ctx, server, gpu_facts)
    findings += check_models(normalised, ctx, server, model_facts, gpu_facts)
    return normalised, findings


def _report(host, server, secrets_dir, plan_instances, findings):
    """build_report's answer: the plan of the plannable instances and every finding, counted by severity."""
    services = plan_services(plan_instances)
    gateway = listeners(plan_instances, services)
    return {
        "host": host,
        "plan": {
            "host": host,
            "gateway_ports": [listener["port"] for listener in gateway],
            "instances": plan_instances,
            "services": services,
            "listeners": gateway,
            "unit_sandbox": unit_sandbox(server.get("gpu_count")),
            "secrets_dir": secrets_dir,
        },
        "findings": findings,
        "errors": sum(1 for f in findings if f["severity"] == ERROR),
        "warnings": sum(1 for f in findings if f["severity"] == WARNING),
        "allowed": sum(1 for f in findings if f["severity"] == ALLOWED),
    }
