# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan entry of one normalised instance: its unit, ports, GPUs, the exact argv and the environment.

Pure Python, no Ansible imports. The API key is never in the argv or env: vLLM reads ``VLLM_API_KEY`` from a
root-only ``EnvironmentFile``, llama.cpp gets ``--api-key-file``; the entry names those files.
"""

from __future__ import annotations

import json

from ansible_collections.volta.serving.plugins.plugin_utils._profiles import (
    API_KEY_ENV,
    BIND_HOST,
    HEALTH_PATH,
    LOOPBACK_RANK_ENV,
    MANAGED_ENV,
)
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    VLLM_ENGINES,
)


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
    if engine in VLLM_ENGINES:
        return _vllm_argv(inst, profile, program)
    return _llamacpp_argv(inst, profile, program, secrets_dir)


def _vllm_argv(inst, profile, program):
    """`vllm serve` with the instance's settings, the profile's flags, then extra_args."""
    extra = list(inst["extra_args"] or [])
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


def _llamacpp_argv(inst, profile, program, secrets_dir):
    """`llama-server` with the instance's settings, the key file, the profile's flags, then extra_args."""
    extra = list(inst["extra_args"] or [])
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
