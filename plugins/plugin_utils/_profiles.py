# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Volta profiles of the engines (what every instance of an engine gets unless it says otherwise), the
plan's fixed places (loopback bind, backend port offset, secrets directory) and the flags the plan sets.

Pure Python, no Ansible imports. ``merge_profiles`` lays preflight_engine_profiles over the defaults.
"""

from __future__ import annotations

import copy

from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import (
    profile_text_problem,
)
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    ENGINES,
)

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
# (max(max_model_len, 2048), see _sm70.vllm_default_mbt) when max_model_len is known; when it is
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
    if mbt is not None and not (is_int(mbt) and mbt > 0):
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


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
