# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan of a V100 host: what each engine instance runs, exactly.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection
(leading underscore): no compatibility promise outside volta.serving.

``build_report()`` is the entry point: it normalises ``volta_instances`` (defaults come from a
per-engine Volta *profile*), checks them with the rules of ``_rules`` and renders, for every
instance, the unit name, ports, ``CUDA_VISIBLE_DEVICES``, the exact argv and the environment.
The same plan is what the units role renders later, so what preflight checks is what runs.
The API key is never in the plan's argv or env: vLLM reads ``VLLM_API_KEY`` from a root-only
``EnvironmentFile``, llama.cpp gets ``--api-key-file``; the plan names those files.
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.volta.serving.plugins.module_utils._rules import (
    ALLOWED,
    DTYPES,
    ENGINES,
    ERROR,
    KV_CACHE_DTYPES,
    MODEL_FAMILIES,
    QUANTIZATIONS,
    VLLM_ENGINES,
    WARNING,
    apply_allow,
    check_gpu_facts,
    check_gpus,
    check_instance,
    check_managed,
    check_platform,
    check_ports,
    check_ram,
    check_software,
    chunked_prefill,
    finding,
    flag_values,
    parse_version,
    throughput_mode,
    vllm_default_mbt,
)
from ansible_collections.volta.serving.plugins.module_utils._services import (
    check_services,
    key_name,
    listeners,
    plan_services,
)
from ansible_collections.volta.serving.plugins.plugin_utils import _defaults
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import (
    cluster_findings,
    join_cluster,
    ray_plan,
    ray_unit,
    read_cluster,
)
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import role as cluster_role
from ansible_collections.volta.serving.plugins.plugin_utils._example_keys import check_example_keys
from ansible_collections.volta.serving.plugins.plugin_utils._gateway import check_gateway
from ansible_collections.volta.serving.plugins.plugin_utils._health_rules import check_gpu_health
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import (
    check_engines_root,
    check_instance_text,
    check_secret_env,
    check_secrets_dir,
    check_server_inputs,
    profile_text_problem,
    secret_env_names,
    secret_names,
)
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import mode_finding, soften, suggestion
from ansible_collections.volta.serving.plugins.plugin_utils._model_rules import check_models, infer_families
from ansible_collections.volta.serving.plugins.plugin_utils._preflight_rules import preflight_findings
from ansible_collections.volta.serving.plugins.plugin_utils._skipped import controller_model_facts, skipped
from ansible_collections.volta.serving.plugins.plugin_utils._units import check_start_limit, unit_sandbox
from ansible_collections.volta.serving.plugins.plugin_utils._vllm_cli import check_flags, resolve_args

BIND_HOST = "127.0.0.1"
BACKEND_PORT_OFFSET = 10000
DEFAULT_SECRETS_DIR = "/etc/volta/secrets"
HEALTH_PATH = "/health"
API_KEY_ENV = "VLLM_API_KEY"

# The Volta profiles: what every instance of an engine gets unless it says otherwise.
# "program" is relative to <engines_root>/<engine>/current.
# vllm: the upstream-vLLM V100 recipe (seed 000): FP16, Triton attention, eager mode, chunked
# prefill off, 0.90 of each GPU. With chunked prefill off vLLM needs max_num_batched_tokens >=
# max_model_len; an instance that leaves it unset gets vLLM's own default rendered explicitly
# (max(max_model_len, 2048), see _rules.vllm_default_mbt) when max_model_len is known; when it is
# not, vLLM raises the default to the model's own context length itself.
# onecat: the 1Cat-vLLM 1M-context recipe (seed 002): its V100 FlashAttention, CUDA graphs
# (no --enforce-eager), chunked prefill on, 0.95 of each GPU, max_num_batched_tokens 4096. FP8 KV
# cache and max_num_seqs <= 4 at 1M tokens stay per-instance settings (rule long-context-seqs).
DEFAULT_PROFILES = {
    "vllm": {
        "program": "venv/bin/vllm",
        "dtype": "half",
        "attention_backend": "TRITON_ATTN",
        "gpu_memory_utilization": 0.90,
        "max_num_batched_tokens": None,
        "flags": ["--enforce-eager", "--no-enable-chunked-prefill"],
        "env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    },
    "onecat": {
        "program": "venv/bin/vllm",
        "dtype": "half",
        "attention_backend": "FLASH_ATTN_V100",
        "gpu_memory_utilization": 0.95,
        "max_num_batched_tokens": 4096,
        "flags": ["--enable-chunked-prefill"],
        "env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    },
    "llamacpp": {
        "program": "bin/llama-server",
        "n_gpu_layers": 999,
        "flags": ["--metrics"],
        "env": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    },
}
PROFILE_KEYS = (
    "program",
    "dtype",
    "attention_backend",
    "gpu_memory_utilization",
    "max_num_batched_tokens",
    "n_gpu_layers",
    "flags",
    "env",
)

REQUIRED_FIELDS = ("name", "engine", "model", "gpus", "port")
OPTIONAL_FIELDS = (
    "enabled",
    "served_model_name",
    "model_family",
    "quantization",
    "tensor_parallel",
    "pipeline_parallel",
    "dtype",
    "kv_cache_dtype",
    "max_model_len",
    "max_num_batched_tokens",
    "max_num_seqs",
    "gpu_memory_utilization",
    "mtp",
    "mtp_num_speculative_tokens",
    "backend_port",
    "service_port",
    "extra_args",
    "env",
    "secret_env",
    "allow",
    "cluster",
    # Replaced by model (the source's served path) before the fields are read (_model.resolve_instances).
    "model_source",
)
KNOWN_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")

# Flags the plan sets from a field; extra_args must not repeat them.
MANAGED_FLAGS = {
    "vllm": {
        "--model": "model",
        "--served-model-name": "served_model_name",
        "--port": "port / backend_port",
        "--dtype": "dtype",
        "--tensor-parallel-size": "tensor_parallel",
        "-tp": "tensor_parallel",
        "--pipeline-parallel-size": "pipeline_parallel",
        "-pp": "pipeline_parallel",
        "--gpu-memory-utilization": "gpu_memory_utilization",
        "--kv-cache-dtype": "kv_cache_dtype",
        "--max-model-len": "max_model_len",
        "--max-num-batched-tokens": "max_num_batched_tokens",
        "--max-num-seqs": "max_num_seqs",
        "--speculative-config": "mtp",
        "-sc": "mtp",
    },
    "llamacpp": {
        "-m": "model",
        "--model": "model",
        "-a": "served_model_name",
        "--alias": "served_model_name",
        "--port": "port / backend_port",
        "-c": "max_model_len",
        "--ctx-size": "max_model_len",
        "-np": "max_num_seqs",
        "--parallel": "max_num_seqs",
        "-b": "max_num_batched_tokens",
        "--batch-size": "max_num_batched_tokens",
        "-ts": "gpus",
        "--tensor-split": "gpus",
    },
}
MANAGED_FLAGS["onecat"] = MANAGED_FLAGS["vllm"]
MANAGED_ENV = {"CUDA_VISIBLE_DEVICES": "gpus"}
# The ranks of a multi-GPU vLLM instance talk over sockets: NCCL's bootstrap and Gloo pick a
# non-loopback interface by default (NCCL leaves out lo unless nothing else is up), and the
# engine unit lets the engine reach localhost only (IPAddressDeny=any): keep both on lo. vLLM
# 0.21.0's own init (multiproc_executor) already uses the loopback address. An instance's env
# may set them otherwise (then extend engine_service_ip_address_allow to match).
LOOPBACK_RANK_ENV = {"NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo"}


def _profile_problem(engine, profile):
    """Why a profile override is not usable, or None."""
    if engine not in ENGINES:
        return f"profile override for {engine!r} is not usable (no such engine)."
    if not isinstance(profile, dict):
        return f"profile override for {engine!r} is not usable (not a mapping)."
    bad_keys = sorted(set(profile) - set(PROFILE_KEYS))
    if bad_keys:
        return f"profile override for {engine!r} is not usable (unknown keys {bad_keys})."
    text = profile_text_problem(profile)
    if text:
        return f"profile override for {engine!r} is not usable ({text})."
    mbt = profile.get("max_num_batched_tokens")
    if mbt is not None and not (_is_int(mbt) and mbt > 0):
        return f"profile override for {engine!r}: max_num_batched_tokens {mbt!r} is not a positive integer or null."
    return None


def merge_profiles(overrides, host):
    """DEFAULT_PROFILES with *overrides* (engine -> partial profile) on top; returns (profiles, findings)."""
    profiles = copy.deepcopy(DEFAULT_PROFILES)
    findings = []
    for engine, profile in (overrides or {}).items():
        problem = _profile_problem(engine, profile)
        if problem:
            findings.append(
                finding(
                    "invalid-value",
                    host,
                    None,
                    "preflight_engine_profiles",
                    problem,
                    f"profiles exist for the engines {', '.join(ENGINES)} with the keys {', '.join(PROFILE_KEYS)}.",
                    "correct preflight_engine_profiles.",
                )
            )
            continue
        profiles[engine].update(copy.deepcopy(profile))
    return profiles, findings


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Normalizer:
    """Reads one raw instance field by field; records a finding for each bad field."""

    def __init__(self, raw, index, host, profiles):
        self.raw, self.index, self.host, self.profiles = raw, index, host, profiles
        self.findings = []
        self.label = instance_label(raw, index)
        self.inst = {"name": None, "plannable": True, "flag_problems": []}

    def bad(self, rule, field, text, why, fix):
        self.findings.append(finding(rule, self.host, self.label, field, text, why, fix))

    def invalid(self, field, text, allowed_text):
        self.bad("invalid-value", field, text, f"{field} must be {allowed_text}.", f"set {field} to {allowed_text}.")
        self.inst["plannable"] = False

    def pick(self, field, valid, allowed_text, default=None):
        value = self.raw.get(field, default)
        if value is None:
            return None
        if not valid(value):
            self.invalid(field, f"{field} {value!r} is not valid.", allowed_text)
            return None
        return value

    def enum(self, field, choices, default):
        value = self.raw.get(field, default)
        if value is None or value == "":
            return None
        if value not in choices:
            self.bad(
                "unknown-value",
                field,
                f"{field} {value!r} is not known.",
                "each value selects rules and flags; an unknown one cannot be checked.",
                f"use one of: {', '.join(choices)}.",
            )
            self.inst["plannable"] = False
            return None
        return value

    def run(self):
        self._presence()
        self._identity()
        self._cluster()
        self._parallelism()
        self._runtime()
        self._passthrough()
        inst = self.inst
        if any(inst[f] is None for f in ("name", "engine", "model", "gpus", "port", "backend_port")):
            inst["plannable"] = False
        return inst, self.findings

    def _presence(self):
        for field in REQUIRED_FIELDS:
            if self.raw.get(field) in (None, "", []):
                self.bad(
                    "missing-field",
                    field,
                    f"{field} is not set.",
                    "name, engine, model, gpus and port are needed to build the launch command.",
                    f"set {field} in volta_instances[{self.index}].",
                )
        for field in sorted(set(self.raw) - set(KNOWN_FIELDS), key=str):
            self.bad(
                "unknown-field",
                field,
                f"{field} is not a field volta.serving reads; it is ignored.",
                "a misspelt field silently keeps the profile default.",
                f"{suggestion(str(field), KNOWN_FIELDS)}Fields are: {', '.join(KNOWN_FIELDS)} "
                "(volta_unknown_variables: warn makes this a warning).",
            )

    def _identity(self):
        inst = self.inst
        name = self.raw.get("name")
        if name not in (None, "") and not (isinstance(name, str) and _NAME_RE.fullmatch(name)):
            self.invalid(
                "name", f"name {name!r} cannot be part of a systemd unit name.", "letters, digits, '-', '_', '.'"
            )
            name = None
        inst["name"] = name or None
        inst["enabled"] = self.pick("enabled", lambda v: isinstance(v, bool), "true or false", True)
        inst["enabled"] = True if inst["enabled"] is None else inst["enabled"]
        inst["engine"] = self.enum("engine", ENGINES, None)
        inst["model"] = self.pick(
            "model", lambda v: isinstance(v, str) and v.strip(), "a model path or Hugging Face id"
        )
        inst["served_model_name"] = self.pick(
            "served_model_name", lambda v: isinstance(v, str) and v.strip(), "a name", inst["name"]
        )
        inst["model_family"] = self.enum("model_family", MODEL_FAMILIES, "dense")
        inst["model_family_given"] = self.raw.get("model_family") not in (None, "")
        inst["quantization"] = self.enum("quantization", QUANTIZATIONS, "none")
        inst["quantization_given"] = self.raw.get("quantization") not in (None, "")
        inst["kv_cache_dtype"] = self.enum("kv_cache_dtype", KV_CACHE_DTYPES, "auto")
        self.profile = self.profiles.get(inst["engine"], {})
        inst["dtype"] = self.enum("dtype", DTYPES, self.profile.get("dtype"))

    def _cluster(self):
        """An instance over several hosts (_cluster): its members, its interface and this host's part."""
        inst = self.inst
        inst["cluster"], inst["cluster_role"] = None, None
        if self.raw.get("cluster") is None:
            return
        cluster, problem = read_cluster(self.raw["cluster"])
        if problem:
            self.bad("cluster-invalid", "cluster", problem,
                     "the members and their interface say where Ray runs and what it binds.",
                     "write cluster: {members: [<head>, <worker>, ...], interface: <name>}.")
            inst["plannable"] = False
            return
        inst["cluster"], inst["cluster_role"] = cluster, cluster_role(self.host, cluster)

    def _parallelism(self):
        inst = self.inst
        gpus = self.raw.get("gpus")
        inst["gpus"] = None
        if gpus not in (None, []):
            if isinstance(gpus, list) and all(_is_int(g) and g >= 0 for g in gpus):
                inst["gpus"] = list(gpus)
            else:
                self.invalid(
                    "gpus",
                    f"gpus {gpus!r} is not a list of GPU indexes (whole numbers from 0).",
                    "a list such as [0, 1]",
                )
        positive = "a positive integer"
        inst["pipeline_parallel"] = self.pick("pipeline_parallel", lambda v: _is_int(v) and v > 0, positive, 1)
        tp_default = None
        if inst["gpus"] and inst["pipeline_parallel"]:
            hosts = len(inst["cluster"]["members"]) if inst["cluster"] else 1
            tp_default = max(len(inst["gpus"]) * hosts // inst["pipeline_parallel"], 1)
        inst["tensor_parallel"] = self.pick("tensor_parallel", lambda v: _is_int(v) and v > 0, positive, tp_default)

    def _runtime(self):
        inst = self.inst
        positive = "a positive integer"
        for field in ("max_model_len", "max_num_batched_tokens", "max_num_seqs"):
            inst[field] = self.pick(field, lambda v: _is_int(v) and v > 0, positive)
        inst["gpu_memory_utilization"] = self.pick(
            "gpu_memory_utilization", _is_number, "a number such as 0.90", self.profile.get("gpu_memory_utilization")
        )
        inst["mtp"] = self.pick("mtp", lambda v: isinstance(v, bool), "true or false", False)
        inst["mtp_num_speculative_tokens"] = self.pick(
            "mtp_num_speculative_tokens", lambda v: _is_int(v) and v > 0, positive, 1
        )
        if inst["engine"] == "llamacpp" and inst["mtp"]:
            self.invalid("mtp", "mtp: true with engine llamacpp.", "false (llama.cpp's server has no MTP)")
        inst["port"] = self.pick("port", _is_int, "a port number")
        backend = self.raw.get("backend_port")
        if backend is None and inst["port"] is not None:
            backend = inst["port"] + BACKEND_PORT_OFFSET
        if backend is not None and not _is_int(backend):
            self.invalid("backend_port", f"backend_port {backend!r} is not a port number.", "a port number")
            backend = None
        inst["backend_port"] = backend
        inst["service_port"] = self.pick("service_port", _is_int, "a port number")
        inst["key_name"] = key_name(inst) if inst["name"] and inst["served_model_name"] else inst["name"]

    def _resolved(self, args):
        """vLLM engines: every flag written out in full, as the pinned parser reads it (_vllm_cli)."""
        if self.inst["engine"] not in VLLM_ENGINES:
            return args
        tokens, self.inst["flag_problems"] = resolve_args(args)
        return tokens

    def _passthrough(self):
        inst = self.inst
        extra = self.raw.get("extra_args", [])
        inst["extra_args"] = None
        if isinstance(extra, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in extra):
            inst["extra_args"] = self._resolved([str(a) for a in extra])
        else:
            self.invalid("extra_args", f"extra_args {extra!r} is not a list of strings.", "a list")
        env = self.raw.get("env", {})
        inst["env"] = None
        if isinstance(env, dict) and all(isinstance(k, str) and k for k in env):
            inst["env"] = {k: _env_value(v) for k, v in env.items()}
        else:
            self.invalid("env", f"env {env!r} is not a mapping of names to values.", "a mapping")
        allow = self.raw.get("allow", [])
        inst["allow"] = allow if isinstance(allow, list) else None
        if inst["allow"] is None:
            self.invalid("allow", f"allow {allow!r} is not a list.", "a list of {rule: ID, reason: ...}")
        # The attention backend: the profile's, unless extra_args names another (it then replaces it).
        inst["attention_backend"] = None
        if inst["engine"] in VLLM_ENGINES:
            given = flag_values(inst["extra_args"] or [], ("--attention-backend",))
            inst["attention_backend"] = given[-1] if given else self.profile.get("attention_backend")


def instance_label(raw, index):
    """How findings name a raw instance: its name when it is a valid one, else ``#<index>``."""
    name = raw.get("name")
    return name if isinstance(name, str) and _NAME_RE.fullmatch(name) else f"#{index}"


def _env_value(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def normalize_instance(raw, index, host, profiles):
    """Return (instance, findings). Fields that are missing or invalid are None in *instance*.

    ``instance["plannable"]`` is False when the argv cannot be rendered. ``instance`` is None when
    *raw* is not a mapping at all.
    """
    if not isinstance(raw, dict):
        return None, [
            finding(
                "invalid-value",
                host,
                f"#{index}",
                f"volta_instances[{index}]",
                f"entry {raw!r} is not a mapping.",
                "each instance is a mapping of fields.",
                "write the instance as name: ..., engine: ..., model: ..., gpus: [...], port: ....",
            )
        ]
    inst, findings = _Normalizer(raw, index, host, profiles).run()
    label = instance_label(raw, index)
    text_findings = check_instance_text(host, label, raw)
    text_findings += check_secret_env(host, label, raw, (*MANAGED_ENV, API_KEY_ENV))
    if text_findings:
        inst["plannable"] = False
    findings += text_findings + secret_names(host, label, raw.get("env"))
    inst["secret_env_names"] = secret_env_names(raw)
    resolve_scheduler(inst, profiles.get(inst["engine"], {}))
    return inst, findings


def resolve_scheduler(inst, profile):
    """Set the profile flags and the max_num_batched_tokens the plan renders (vLLM engines).

    ``mbt_from`` says where the value comes from: the instance, the profile, or vLLM's own default
    (rendered explicitly when chunked prefill is off and max_model_len is known, so that the argv
    says what the engine runs with).
    """
    inst["profile_flags"], inst["mbt_from"], inst["profile_mbt"] = [], None, None
    if inst["engine"] not in VLLM_ENGINES:
        return
    inst["profile_flags"] = list(profile.get("flags") or [])
    inst["profile_mbt"] = profile.get("max_num_batched_tokens")
    if inst["max_num_batched_tokens"] is not None:
        inst["mbt_from"] = "instance"
        return
    if profile.get("max_num_batched_tokens") is not None:
        inst["max_num_batched_tokens"], inst["mbt_from"] = profile["max_num_batched_tokens"], "profile"
        return
    args = inst["profile_flags"] + list(inst["extra_args"] or [])
    chunked = chunked_prefill(args)[0]
    if chunked is False and inst["max_model_len"] is not None:
        inst["max_num_batched_tokens"] = vllm_default_mbt(
            inst["max_model_len"], inst["max_num_seqs"], chunked, throughput_mode(args)
        )
        inst["mbt_from"] = "vllm-default"


def _fmt_fraction(value):
    text = f"{value:.2f}"
    return text if float(text) == value else repr(float(value))


def _strip_flag(args, name):
    """*args* without ``name value`` / ``name=value``."""
    out = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == name:
            skip = True
            continue
        if arg.startswith(name + "="):
            continue
        out.append(arg)
    return out


def render_argv(inst, profile, engines_root, secrets_dir):
    """The exact command line of an instance, program first."""
    engine = inst["engine"]
    program = f"{engines_root.rstrip('/')}/{engine}/current/{profile['program']}"
    extra = list(inst["extra_args"] or [])
    if engine in VLLM_ENGINES:
        argv = [
            program,
            "serve",
            inst["model"],
            "--served-model-name",
            inst["served_model_name"],
            "--host",
            BIND_HOST,
            "--port",
            str(inst["backend_port"]),
        ]
        if inst["dtype"]:
            argv += ["--dtype", inst["dtype"]]
        if inst["attention_backend"]:
            argv += ["--attention-backend", inst["attention_backend"]]
        argv += [
            "--tensor-parallel-size",
            str(inst["tensor_parallel"]),
            "--pipeline-parallel-size",
            str(inst["pipeline_parallel"]),
        ]
        if inst["gpu_memory_utilization"] is not None:
            argv += ["--gpu-memory-utilization", _fmt_fraction(inst["gpu_memory_utilization"])]
        if inst["kv_cache_dtype"] not in (None, "auto"):
            argv += ["--kv-cache-dtype", inst["kv_cache_dtype"]]
        for field, flag in (
            ("max_model_len", "--max-model-len"),
            ("max_num_batched_tokens", "--max-num-batched-tokens"),
            ("max_num_seqs", "--max-num-seqs"),
        ):
            if inst[field] is not None:
                argv += [flag, str(inst[field])]
        if inst["mtp"]:
            spec = {"method": "mtp", "num_speculative_tokens": inst["mtp_num_speculative_tokens"]}
            argv += ["--speculative-config", json.dumps(spec, sort_keys=True, separators=(",", ":"))]
        argv += list(profile.get("flags") or [])
        argv += _strip_flag(extra, "--attention-backend")
        return argv
    argv = [
        program,
        "-m",
        inst["model"],
        "--alias",
        inst["served_model_name"],
        "--host",
        BIND_HOST,
        "--port",
        str(inst["backend_port"]),
    ]
    if inst["max_model_len"] is not None:
        argv += ["-c", str(inst["max_model_len"])]
    argv += ["-ngl", str(profile.get("n_gpu_layers", 999))]
    if len(inst["gpus"]) > 1:
        argv += ["--tensor-split", ",".join("1" for _gpu in inst["gpus"])]
    if inst["max_num_seqs"] is not None:
        argv += ["-np", str(inst["max_num_seqs"])]
    if inst["max_num_batched_tokens"] is not None:
        argv += ["-b", str(inst["max_num_batched_tokens"])]
    argv += ["--api-key-file", api_key_file(inst["name"], secrets_dir)]
    argv += list(profile.get("flags") or [])
    argv += extra
    return argv


def api_key_file(name, secrets_dir):
    return f"{secrets_dir.rstrip('/')}/{name}.key"


def environment_file(name, secrets_dir):
    return f"{secrets_dir.rstrip('/')}/{name}.env"


def plan_instance(inst, profile, engines_root, secrets_dir):
    """The plan entry of one normalised, plannable instance."""
    engine = inst["engine"]
    visible = ",".join(str(gpu) for gpu in inst["gpus"])
    env = dict(profile.get("env") or {})
    env["CUDA_VISIBLE_DEVICES"] = visible
    vllm_like = engine in VLLM_ENGINES
    if vllm_like and len(inst["gpus"]) > 1:
        env.update(LOOPBACK_RANK_ENV)
    env.update({k: v for k, v in (inst["env"] or {}).items() if k not in MANAGED_ENV})
    return {
        "name": inst["name"],
        "enabled": inst["enabled"],
        "engine": engine,
        "unit": f"volta-{inst['name']}.service",
        "model": inst["model"],
        "served_model_name": inst["served_model_name"],
        "model_family": inst["model_family"],
        "quantization": inst["quantization"],
        "public_port": inst["port"],
        "backend_port": inst["backend_port"],
        "service_port": inst["service_port"],
        "key_name": inst["key_name"],
        "bind_host": BIND_HOST,
        "health_path": HEALTH_PATH,
        "gpus": list(inst["gpus"]),
        "cuda_visible_devices": visible,
        "tensor_parallel": inst["tensor_parallel"],
        "pipeline_parallel": inst["pipeline_parallel"],
        "engine_dir": f"{engines_root.rstrip('/')}/{engine}/current",
        "argv": render_argv(inst, profile, engines_root, secrets_dir),
        "env": dict(sorted(env.items())),
        "environment_file": environment_file(inst["name"], secrets_dir)
        if vllm_like or inst["secret_env_names"]
        else None,
        "secret_env_names": list(inst["secret_env_names"]),
        "api_key_env": API_KEY_ENV if vllm_like else None,
        "api_key_file": None if vllm_like else api_key_file(inst["name"], secrets_dir),
        "allowed": [],
        # Addresses the unit may reach besides engine_service_ip_address_allow (a cluster's members).
        "ip_allow": [],
        "cluster": None,
        "restart": "on-failure",
    }


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
    if isinstance(islands, list) and all(isinstance(i, list) and all(_is_int(g) for g in i) for i in islands):
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
    if not (_is_int(gpu_count) and gpu_count >= 1):
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
        "gpu_count": gpu_count if _is_int(gpu_count) and gpu_count >= 1 else None,
        "ram_gb": ram_gb if _is_number(ram_gb) else None,
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
            findings += cluster_findings(ctx["host"], inst, ctx["cluster_members"], ctx["ray_ports"], ports)
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


def build_report(
    host,
    server,
    instances,
    *,
    driver_branch=None,
    driver_kernel_module=None,
    cuda_version=None,
    engine_versions=None,
    ssh_port=22,
    keyed_instances=(),
    host_key=False,
    generate_keys=False,
    profiles=None,
    engines_root=None,
    secrets_dir=DEFAULT_SECRETS_DIR,
    reserved_ports=None,
    build_packages=None,
    ram_need_gb=None,
    gpu_facts=None,
    model_facts=None,
    platform=None,
    gateway=None,
    key_sha256=None,
    lab=False,
    units=None,
    unknown_mode="error",
    preflight=None,
    model_facts_from="host",
    cluster_members=None,
    ray_ports=None,
    service_home=None,
):
    """Check one host's instances and build its plan.

    *unknown_mode*: volta_unknown_variables (``warn`` makes unknown variables and fields warnings).
    *preflight*: the controller-side inputs of ``_preflight_rules.preflight_findings`` (preflight only).
    *model_facts_from*: ``controller`` when *model_facts* were read on the controller (paths not there are
    not missing, they were not read); the report's ``skipped`` lists the rules that did not run and why.

    *gateway*: the api_gateway settings that reach nginx (``_gateway.GATEWAY_KEYS``), or None.
    *key_sha256*: where each configured key is set -> its sha256 (never the keys); *lab*: volta_lab.
    *units*: engine_service's restart_sec, start_limit_interval and start_limit_burst (``_units``).
    *cluster_members*: what the other members of a multi-host instance have (``_cluster``); *ray_ports*:
    engine_service_ray_ports; *service_home*: engine_service_home (Ray's temp dir is under it).

    Returns ``{"host", "plan": {"host", "gateway_ports", "instances": [...]}, "findings": [...],
    "errors", "warnings", "allowed"}``. Findings are dicts with rule, severity
    (error|warning|allowed), host, instance (None for host-wide ones), field, message (and reason
    when allowed). *model_facts* (the ``volta_checkpoints`` fact of volta.serving.model_facts) turns on
    the model rules of ``_model_rules``; without it they do not run. *platform* (optional) feeds
    the platform rules: ``host`` (``distribution``, ``version``, ``glibc``, ``note``; None when the
    host's platform is not known at all), ``engine_pythons`` (engine -> explicit interpreter),
    ``uv_python`` and ``onecat_wheel``.
    """
    pins = default_settings()
    engines_root = engines_root or pins["engines_root"]
    settings = {
        "driver_branch": driver_branch or pins["driver_branch"],
        "driver_kernel_module": driver_kernel_module or pins["driver_kernel_module"],
        "cuda_version": cuda_version or pins["cuda_version"],
        "engine_versions": engine_versions, "ssh_port": ssh_port, "keyed_instances": keyed_instances,
        "host_key": host_key, "generate_keys": generate_keys, "reserved_ports": reserved_ports,
        "build_packages": build_packages, "ram_need_gb": ram_need_gb,
        "cluster_members": cluster_members, "ray_ports": ray_ports, "service_home": service_home,
        **{("host_platform" if k == "host" else k): v for k, v in (platform or {}).items()},
    }
    server, instances, findings = _host_inputs(host, server, instances)
    reasons = {}
    if model_facts is not None and model_facts_from == "controller":
        model_facts, reasons = controller_model_facts(model_facts)
    if preflight is not None:
        findings += preflight_findings(host, preflight, instances, gateway)
    findings += [f for f in [mode_finding(host, unknown_mode)] if f]
    findings += _host_wide_findings(host, server, gateway=gateway, secrets_dir=secrets_dir,
                                    engines_root=engines_root, key_sha256=key_sha256, lab=lab, units=units)
    merged, profile_findings = merge_profiles(profiles, host)
    islands, island_findings = _islands(host, server)
    findings += profile_findings + island_findings
    ctx = _context(host, server, islands, settings)
    normalised, instance_findings = _checked_instances(host, instances, merged, ctx, server, gpu_facts, model_facts)
    findings = soften(findings + instance_findings, unknown_mode)
    findings = apply_allow(findings, [inst for inst in normalised if inst["name"]], host)
    ray = _ray_plan(normalised, ctx, secrets_dir, engines_root)
    entries = _plan_entries(normalised, merged, findings, engines_root, secrets_dir, ray)
    report = _report(host, server, secrets_dir, entries, findings)
    report["plan"]["ray"] = ray
    report["skipped"] = skipped(normalised, model_facts, gpu_facts, reasons)
    return report


def _host_wide_findings(host, server, *, gateway, secrets_dir, engines_root, key_sha256, lab, units):
    """The findings that concern the host rather than one instance: its description, the gateway's
    settings, the secrets and engines directories, the example keys and the units' start limit."""
    return (check_server_inputs(host, server) + check_gateway(host, gateway)
            + check_secrets_dir(host, secrets_dir) + check_engines_root(host, engines_root)
            + check_example_keys(host, key_sha256, lab) + check_start_limit(host, units))


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
