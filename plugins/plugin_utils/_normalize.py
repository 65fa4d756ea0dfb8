# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One raw instance of volta_instances read field by field into the normalised instance the rules judge.

Pure Python, no Ansible imports. Every known field is present in the result, None where it was missing or
invalid (that gave a finding); ``plannable`` says whether its argv can be rendered.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._services import key_name
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import (
    read_cluster,
)
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import role as cluster_role
from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import (
    check_instance_text,
    check_secret_env,
    secret_env_names,
    secret_names,
)
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import suggestion
from ansible_collections.volta.serving.plugins.plugin_utils._profiles import (
    API_KEY_ENV,
    BACKEND_PORT_OFFSET,
    MANAGED_ENV,
    is_int,
    is_number,
)
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    DTYPES,
    ENGINES,
    KV_CACHE_DTYPES,
    MODEL_FAMILIES,
    QUANTIZATIONS,
    VLLM_ENGINES,
    chunked_prefill,
    flag_values,
    throughput_mode,
    vllm_default_mbt,
)
from ansible_collections.volta.serving.plugins.plugin_utils._vllm_cli import resolve_args

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
            self.invalid(field, f"{field} {shown(value)} is not valid.", allowed_text)
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
                f"{field} {shown(value)} is not known.",
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
                "name", f"name {shown(name)} cannot be part of a systemd unit name.", "letters, digits, '-', '_', '.'"
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
            if isinstance(gpus, list) and all(is_int(g) and g >= 0 for g in gpus):
                inst["gpus"] = list(gpus)
            else:
                self.invalid(
                    "gpus",
                    f"gpus {shown(gpus)} is not a list of GPU indexes (whole numbers from 0).",
                    "a list such as [0, 1]",
                )
        positive = "a positive integer"
        inst["pipeline_parallel"] = self.pick("pipeline_parallel", lambda v: is_int(v) and v > 0, positive, 1)
        tp_default = None
        if inst["gpus"] and inst["pipeline_parallel"]:
            hosts = len(inst["cluster"]["members"]) if inst["cluster"] else 1
            tp_default = max(len(inst["gpus"]) * hosts // inst["pipeline_parallel"], 1)
        inst["tensor_parallel"] = self.pick("tensor_parallel", lambda v: is_int(v) and v > 0, positive, tp_default)

    def _runtime(self):
        inst = self.inst
        positive = "a positive integer"
        for field in ("max_model_len", "max_num_batched_tokens", "max_num_seqs"):
            inst[field] = self.pick(field, lambda v: is_int(v) and v > 0, positive)
        inst["gpu_memory_utilization"] = self.pick(
            "gpu_memory_utilization", is_number, "a number such as 0.90", self.profile.get("gpu_memory_utilization")
        )
        inst["mtp"] = self.pick("mtp", lambda v: isinstance(v, bool), "true or false", False)
        inst["mtp_num_speculative_tokens"] = self.pick(
            "mtp_num_speculative_tokens", lambda v: is_int(v) and v > 0, positive, 1
        )
        if inst["engine"] == "llamacpp" and inst["mtp"]:
            self.invalid("mtp", "mtp: true with engine llamacpp.", "false (llama.cpp's server has no MTP)")
        inst["port"] = self.pick("port", is_int, "a port number")
        backend = self.raw.get("backend_port")
        if backend is None and inst["port"] is not None:
            backend = inst["port"] + BACKEND_PORT_OFFSET
        if backend is not None and not is_int(backend):
            self.invalid("backend_port", f"backend_port {shown(backend)} is not a port number.", "a port number")
            backend = None
        inst["backend_port"] = backend
        inst["service_port"] = self.pick("service_port", is_int, "a port number")
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
            self.invalid("extra_args", f"extra_args {shown(extra)} is not a list of strings.", "a list")
        env = self.raw.get("env", {})
        inst["env"] = None
        if isinstance(env, dict) and all(isinstance(k, str) and k for k in env):
            inst["env"] = {k: _env_value(v) for k, v in env.items()}
        else:
            self.invalid("env", f"env {shown(env)} is not a mapping of names to values.", "a mapping")
        allow = self.raw.get("allow", [])
        inst["allow"] = allow if isinstance(allow, list) else None
        if inst["allow"] is None:
            self.invalid("allow", f"allow {shown(allow)} is not a list.", "a list of {rule: ID, reason: ...}")
        # The attention backend: the profile's, unless extra_args names another (it then replaces it).
        inst["attention_backend"] = None
        if inst["engine"] in VLLM_ENGINES:
            given = flag_values(inst["extra_args"] or [], ("--attention-backend",))
            inst["attention_backend"] = given[-1] if given else self.profile.get("attention_backend")


def shown(value):
    """A value as the inventory wrote it: null, true and false in YAML's words, anything else as its repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value)


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
                f"entry {shown(raw)} is not a mapping.",
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
