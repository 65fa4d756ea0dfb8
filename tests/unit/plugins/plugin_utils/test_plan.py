# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_plan.py and _rules.py: the serving plan and the V100 rules.

Ground truth: shared/reference/v100-serving-facts.md (sections 1, 3, 4) and the seeds' pitfall
table and working configurations. Expected command lines are written out by hand below from the
facts page (section 4's Volta flags); vLLM flag names are checked against the flag list derived
from the real vLLM 0.21.0 wheel (tests/lab/pypi/vllm-flags/0.21.0.json).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.module_utils._model import DEFAULT_ROOT, resolve_instances
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import CLUSTER_RULES
from ansible_collections.volta.serving.plugins.plugin_utils._health_rules import HEALTH_RULES
from ansible_collections.volta.serving.plugins.plugin_utils._model_rules import MODEL_RULES
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report
from ansible_collections.volta.serving.plugins.plugin_utils._rules import OVERRIDABLE, RULES

REPO = Path(__file__).resolve().parents[4]
VLLM_FLAGS = REPO / "tests" / "lab" / "pypi" / "vllm-flags" / "0.21.0.json"

# sha256 of the published test key of inventories/sim (qwen72b).
SIM_QWEN72B_KEY_SHA256 = "cecbf42909f4f777ba90c58ad16b17b1189bf98f3fb5a752011fe65c75bba88d"
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - the address the bind rule must reject
SXM2 = {
    "gpu_model": "Tesla V100-SXM2-32GB",
    "gpu_count": 10,
    "compute_capability": "7.0",
    "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
    "ram_gb": 512,
}
PCIE = {
    "gpu_model": "Tesla V100-PCIE-32GB",
    "gpu_count": 8,
    "compute_capability": "7.0",
    "nvlink_islands": [],
    "ram_gb": 251,
}
VERSIONS = {
    "vllm": {"version": "0.21.0", "torch_version": "2.11.0", "torch_cuda": "cu126"},
    "onecat": {"version": "1.5.1", "torch_version": "2.10.0", "torch_cuda": "cu128"},
}

# The seeds' working configurations, as a user writes them (only what differs from the profile).
COMMAND_R = {
    "name": "command-r",
    "engine": "vllm",
    "model": "/srv/models/command-r-32b",
    "served_model_name": "command-r",
    "gpus": [0, 1, 2, 3],
    "tensor_parallel": 4,
    "max_model_len": 32768,
    "max_num_seqs": 16,
    "port": 8001,
}
QWEN72B = {
    "name": "qwen72b",
    "engine": "vllm",
    "model": "/srv/models/qwen2.5-72b-instruct",
    "served_model_name": "qwen2.5-72b",
    "gpus": [0, 1, 2, 3, 4, 5, 6, 7],
    "tensor_parallel": 4,
    "pipeline_parallel": 2,
    "max_model_len": 32768,
    "port": 8002,
}
GGUF = {
    "name": "deepseek-lite",
    "engine": "llamacpp",
    "model": "/srv/models/DeepSeek-V2-Lite-Chat-Q8_0.gguf",
    "served_model_name": "deepseek-v2-lite",
    "model_family": "deepseek-mla",
    "quantization": "gguf",
    "gpus": [8, 9],
    "max_model_len": 32768,
    "port": 8003,
}
FLASH_NEXT_A = {
    "name": "flash-next-a",
    "engine": "onecat",
    "model": "/srv/models/Qwen3.8-Flash-Next-NVFP4",
    "served_model_name": "qwen3.8-flash-next",
    "model_family": "moe-nvfp4",
    "quantization": "nvfp4",
    "gpus": [0, 1, 2, 3],
    "tensor_parallel": 4,
    "kv_cache_dtype": "fp8",
    "mtp": False,
    "gpu_memory_utilization": 0.95,
    "max_model_len": 1048576,
    "max_num_batched_tokens": 4096,
    "max_num_seqs": 4,
    "port": 8001,
}
FLASH_NEXT_B = {**FLASH_NEXT_A, "name": "flash-next-b", "gpus": [4, 5, 6, 7], "port": 8002}
# Server B as the seed runs it: the two instances as one service on port 8000.
FLASH_NEXT_A_SVC = {**FLASH_NEXT_A, "service_port": 8000}
FLASH_NEXT_B_SVC = {**FLASH_NEXT_B, "service_port": 8000}
DEEPSEEK_V4 = {
    "name": "deepseek-v4",
    "engine": "onecat",
    "model": "/srv/models/DeepSeek-V4-Flash",
    "model_family": "deepseek-v4",
    "quantization": "mxfp4",
    "gpus": [0, 1, 2, 3, 4, 5, 6, 7],
    "tensor_parallel": 4,
    "pipeline_parallel": 2,
    "kv_cache_dtype": "fp8",
    "max_model_len": 1048576,
    "max_num_seqs": 2,
    "port": 8001,
}


def with_(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def run(server, instances, host="h", **settings):
    settings.setdefault("engine_versions", VERSIONS)
    settings.setdefault("generate_keys", True)
    return build_report(PlanInputs(host, copy.deepcopy(server), copy.deepcopy(instances), **settings))


def only(report, severity):
    return [f for f in report["findings"] if f["severity"] == severity]


# ------------------------------------------------------------------------------------------------
# Valid configurations: the seeds' working ones and the facts page's measured ones.
# ------------------------------------------------------------------------------------------------

VALID = [
    ("command-r-tp4-one-quad-board", SXM2, [COMMAND_R], {}),
    ("qwen72b-tp4-pp2-two-quad-boards", SXM2, [QWEN72B], {}),
    ("llamacpp-gguf-dual-board", SXM2, [GGUF], {}),
    ("server-a-layout-command-r-disabled", SXM2, [QWEN72B, with_(COMMAND_R, enabled=False), GGUF], {}),
    ("server-a-command-r-plus-gguf", SXM2, [COMMAND_R, GGUF], {}),
    ("two-flash-next-tp4-pcie-one-service", PCIE, [FLASH_NEXT_A_SVC, FLASH_NEXT_B_SVC], {}),
    ("service-key-by-service-name", PCIE, [FLASH_NEXT_A_SVC, FLASH_NEXT_B_SVC],
     {"generate_keys": False, "keyed_instances": ["qwen3.8-flash-next"]}),
    ("service-of-one-replica", PCIE, [FLASH_NEXT_A_SVC], {}),
    ("flash-next-fp16-kv-mtp-off", PCIE, [with_(FLASH_NEXT_A, kv_cache_dtype="auto", max_model_len=288802)], {}),
    ("deepseek-v4-pp2-tp4-fp8-kv-onecat", PCIE, [DEEPSEEK_V4], {}),
    ("keys-from-api-gateway-keys", PCIE, [FLASH_NEXT_A], {"generate_keys": False, "keyed_instances": ["flash-next-a"]}),
    ("per-host-key", PCIE, [FLASH_NEXT_A], {"generate_keys": False, "host_key": True}),
    ("no-instances", SXM2, [], {}),
    ("torch-2.11-cu126-keeps-volta", SXM2, [COMMAND_R], {"engine_versions": VERSIONS}),
    ("build-packages-with-headers", SXM2, [COMMAND_R], {"build_packages": ["python3.12-dev", "ninja-build"]}),
    ("attention-backend-triton-explicit", SXM2,
     [with_(COMMAND_R, extra_args=["--attention-backend", "TRITON_ATTN"])], {}),
    ("loopback-port-offset-explicit", SXM2, [with_(COMMAND_R, backend_port=9001)], {}),
    # vLLM's exllama GPTQ kernels take SM60+: upstream vLLM serves GPTQ on a V100.
    ("gptq-upstream-exllama", SXM2, [with_(COMMAND_R, quantization="gptq")], {}),
]


@pytest.mark.parametrize(("server", "instances", "settings"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_configurations_have_no_error_or_warning(server, instances, settings):
    report = run(server, instances, **settings)
    assert report["findings"] == []
    assert report["errors"] == 0
    assert len(report["plan"]["instances"]) == len(instances)


def test_flash_next_launcher_default_mtp_on_is_only_a_warning():
    # FP16 KV, MTP on (the launcher default): it runs (186,742 tokens), but slower on PCIe.
    report = run(PCIE, [with_(FLASH_NEXT_A, kv_cache_dtype="auto", mtp=True, max_model_len=186742)])
    assert report["errors"] == 0
    assert [f["rule"] for f in report["findings"]] == ["mtp-pcie-tp"]


@pytest.mark.parametrize(
    ("inventory", "host"),
    [("lab", "server-a"), ("lab", "server-b"), ("sim", "sxm2"), ("sim", "pcie")],
)
def test_shipped_inventories_pass(inventory, host):
    host_vars = yaml.safe_load((REPO / "inventories" / inventory / "host_vars" / f"{host}.yml").read_text())
    instances = host_vars["volta_instances"]
    group_vars = REPO / "inventories" / inventory / "group_vars" / "volta" / "lab.yml"
    models = yaml.safe_load(group_vars.read_text()).get("volta_models", {}) if group_vars.exists() else {}
    if models:  # the model sources the instances name, served from the model layer's directories
        instances = resolve_instances(instances, models, DEFAULT_ROOT)
    report = run(host_vars["volta_server"], instances, host=host)
    assert report["findings"] == []
    assert report["plan"]["gateway_ports"]


# ------------------------------------------------------------------------------------------------
# Invalid configurations: one rule each; the message names host, instance and field.
# (case id, server, instances, settings, rule, severity, instance, field, text in the message)
# ------------------------------------------------------------------------------------------------

INVALID = [
    # The seeds' pitfall table, row by row.
    ("pitfall-python-h", SXM2, [COMMAND_R], {"build_packages": ["build-essential", "ninja-build"]},
     "python-headers", "error", None, "engine_build_packages", "Python.h"),
    ("pitfall-mtp-pcie-slower", PCIE, [with_(FLASH_NEXT_A, kv_cache_dtype="auto", mtp=True, max_model_len=262144)],
     {}, "mtp-pcie-tp", "warning", "flash-next-a", "mtp", "custom all-reduce"),
    ("pitfall-qsa-e4m3-requires-mtp0", PCIE, [with_(FLASH_NEXT_A, mtp=True)], {},
     "qwen-fp8-kv-mtp", "error", "flash-next-a", "kv_cache_dtype", "requires MTP0"),
    ("pitfall-csa-linear-cache-geometry", PCIE,
     [with_(FLASH_NEXT_A, gpus=[0, 1, 2, 3, 4, 5, 6, 7], pipeline_parallel=2)], {},
     "qwen-linear-pp", "error", "flash-next-a", "pipeline_parallel", "cache geometry"),
    ("pitfall-qwen-linear-pp", PCIE,
     [with_(FLASH_NEXT_A, model_family="qwen-linear", quantization="none", gpus=[0, 1], tensor_parallel=1,
            pipeline_parallel=2)], {},
     "qwen-linear-pp", "error", "flash-next-a", "pipeline_parallel", "pipeline_parallel 2"),
    ("pitfall-nvfp4-moe-tp8", PCIE, [with_(FLASH_NEXT_A, gpus=list(range(8)), tensor_parallel=8)], {},
     "nvfp4-moe-tp", "error", "flash-next-a", "tensor_parallel", "two TP=4 instances"),
    ("pitfall-nvfp4-moe-expert-parallel", PCIE, [with_(FLASH_NEXT_A, extra_args=["--enable-expert-parallel"])], {},
     "nvfp4-moe-tp", "error", "flash-next-a", "tensor_parallel", "(1, 2, 4)"),
    ("pitfall-deepseek-v4-fp8-kv", PCIE, [with_(DEEPSEEK_V4, kv_cache_dtype="auto")], {},
     "deepseek-v4-kv", "error", "deepseek-v4", "kv_cache_dtype", "only supports fp8 kv-cache"),
    ("pitfall-oom-cuda-graph-capture", PCIE, [with_(FLASH_NEXT_A, gpu_memory_utilization=0.98)], {},
     "gpu-memory-headroom", "warning", "flash-next-a", "gpu_memory_utilization", "CUDA graph capture"),
    ("pitfall-dies-at-8-concurrent", PCIE, [with_(FLASH_NEXT_A, max_num_seqs=8)], {},
     "long-context-seqs", "warning", "flash-next-a", "max_num_seqs", "max_num_seqs 8"),
    ("long-context-seqs-unset", PCIE, [{k: v for k, v in FLASH_NEXT_A.items() if k != "max_num_seqs"}], {},
     "long-context-seqs", "warning", "flash-next-a", "max_num_seqs", "unset"),
    # GPUs and parallelism.
    ("gpu-out-of-range", SXM2, [with_(GGUF, gpus=[9, 10])], {},
     "gpu-out-of-range", "error", "deepseek-lite", "gpus", "GPU 10 does not exist"),
    ("gpu-duplicate", SXM2, [with_(GGUF, gpus=[8, 8])], {},
     "gpu-duplicate", "error", "deepseek-lite", "gpus", "GPU 8 is listed twice"),
    ("gpu-shared", SXM2, [QWEN72B, COMMAND_R], {},
     "gpu-shared", "error", "command-r", "gpus", "also used by instance qwen72b"),
    ("tp-times-pp-mismatch", SXM2, [with_(COMMAND_R, tensor_parallel=2)], {},
     "parallel-size-mismatch", "error", "command-r", "tensor_parallel", "= 2, but gpus lists 4"),
    ("tp-spans-nvlink-islands", SXM2, [with_(QWEN72B, gpus=[0, 1, 4, 5, 2, 3, 6, 7])], {},
     "tp-spans-nvlink", "warning", "qwen72b", "gpus", "[0, 1, 2, 3, 4, 5, 6, 7]"),
    ("tp-spans-nvlink-no-fix", SXM2, [with_(COMMAND_R, gpus=[2, 3, 4, 5])], {},
     "tp-spans-nvlink", "warning", "command-r", "gpus", "no order of these GPUs"),
    # Ports.
    ("port-collision-public", SXM2, [COMMAND_R, with_(GGUF, port=8001)], {},
     "port-collision", "error", "deepseek-lite", "port", "public port of instance command-r"),
    ("port-collision-backend", SXM2, [COMMAND_R, with_(GGUF, port=18001)], {},
     "port-collision", "error", "deepseek-lite", "port", "loopback port of instance command-r"),
    ("port-collision-ssh", SXM2, [with_(COMMAND_R, port=2222)], {"ssh_port": 2222},
     "port-collision", "error", "command-r", "port", "SSH"),
    ("port-collision-reserved", SXM2, [with_(COMMAND_R, port=9100)], {"reserved_ports": {9100: "node_exporter"}},
     "port-collision", "error", "command-r", "port", "node_exporter"),
    ("port-collision-service", SXM2, [with_(COMMAND_R, service_port=8003), GGUF], {},
     "port-collision", "error", "deepseek-lite", "port", "public port of the service command-r"),
    # Replica services (instances that share a served_model_name).
    ("replicas-differ-in-length", PCIE, [FLASH_NEXT_A_SVC, with_(FLASH_NEXT_B_SVC, max_model_len=262144)], {},
     "replica-mismatch", "error", "flash-next-b", "max_model_len",
     "flash-next-b and flash-next-a both serve qwen3.8-flash-next, but their max_model_len differ "
     "(262144 and 1048576)"),
    ("replicas-differ-in-revision", PCIE,
     [FLASH_NEXT_A_SVC, with_(FLASH_NEXT_B_SVC, model="/srv/volta/models/flash@0a1b2c")], {},
     "replica-mismatch", "error", "flash-next-b", "model", "their model (its path carries the revision) differ"),
    ("replicas-differ-in-engine", SXM2,
     [with_(COMMAND_R, service_port=8000),
      with_(COMMAND_R, name="command-r-b", engine="onecat", gpus=[4, 5, 6, 7], port=8002, service_port=8000)], {},
     "replica-mismatch", "error", "command-r-b", "engine", "their engine differ ('onecat' and 'vllm')"),
    ("replicas-two-service-ports", PCIE, [FLASH_NEXT_A_SVC, with_(FLASH_NEXT_B_SVC, service_port=8010)], {},
     "service-port-mismatch", "error", "flash-next-b", "service_port", "with service_port 8010 and 8000"),
    ("replicas-one-without-service-port", PCIE, [FLASH_NEXT_A_SVC, FLASH_NEXT_B], {},
     "service-port-mismatch", "error", "flash-next-b", "service_port", "with service_port None and 8000"),
    ("replicas-without-service-port", PCIE, [FLASH_NEXT_A, FLASH_NEXT_B], {},
     "replicas-without-service-port", "warning", "flash-next-b", "service_port",
     "flash-next-a, flash-next-b all serve qwen3.8-flash-next, each on its own port (flash-next-a 8001, "
     "flash-next-b 8002)"),
    ("replica-key-named-after-instance", PCIE, [FLASH_NEXT_A_SVC, FLASH_NEXT_B_SVC],
     {"generate_keys": False, "keyed_instances": ["qwen3.8-flash-next", "flash-next-b"]},
     "replica-key-name", "error", "flash-next-b", "api_gateway_keys",
     "api_gateway_keys[flash-next-b] is set, but flash-next-b is a replica of the service qwen3.8-flash-next"),
    ("replica-without-service-key", PCIE, [FLASH_NEXT_A_SVC, FLASH_NEXT_B_SVC],
     {"generate_keys": False, "keyed_instances": ["flash-next-a", "flash-next-b"]},
     "no-api-key", "error", "flash-next-a", "api_gateway_keys",
     "(a replica of the service qwen3.8-flash-next: its key is api_gateway_keys[qwen3.8-flash-next])"),
    ("port-backend-over-65535", SXM2, [with_(COMMAND_R, port=60000)], {},
     "port-invalid", "error", "command-r", "backend_port", "backend_port 70000"),
    # SM70 hardware and software.
    ("bf16", SXM2, [with_(COMMAND_R, dtype="bfloat16")], {},
     "bf16-on-sm70", "error", "command-r", "dtype", "dtype bfloat16"),
    ("bf16-alias", SXM2, [with_(GGUF, dtype="bf16")], {},
     "bf16-on-sm70", "error", "deepseek-lite", "dtype", "dtype bf16"),
    ("flash-attn", SXM2, [with_(COMMAND_R, extra_args=["--attention-backend", "FLASH_ATTN"])], {},
     "flash-attention-on-sm70", "error", "command-r", "extra_args", "FLASH_ATTN on vllm"),
    ("flashinfer-equals-form", SXM2, [with_(COMMAND_R, extra_args=["--attention-backend=FLASHINFER"])], {},
     "flash-attention-on-sm70", "error", "command-r", "extra_args", "FLASHINFER"),
    ("flash-attn-v100-on-upstream", SXM2, [with_(COMMAND_R, extra_args=["--attention-backend", "FLASH_ATTN_V100"])],
     {}, "unknown-value", "error", "command-r", "extra_args", "1Cat-vLLM backend"),
    ("awq-upstream", SXM2, [with_(COMMAND_R, quantization="awq")], {},
     "quantization-needs-onecat", "error", "command-r", "quantization", "awq weights on upstream vLLM"),
    ("fp8-upstream", SXM2, [with_(COMMAND_R, quantization="fp8")], {},
     "quantization-needs-onecat", "error", "command-r", "quantization", "fp8"),
    ("nvfp4-upstream", PCIE, [with_(FLASH_NEXT_A, engine="vllm")], {},
     "quantization-needs-onecat", "error", "flash-next-a", "quantization", "nvfp4"),
    ("mxfp4-upstream", SXM2, [with_(COMMAND_R, quantization="mxfp4")], {},
     "quantization-needs-onecat", "error", "command-r", "quantization", "mxfp4"),
    ("mla-on-vllm", SXM2, [with_(COMMAND_R, model_family="deepseek-mla")], {},
     "mla-needs-llamacpp", "error", "command-r", "engine", "use engine: llamacpp"),
    ("mla-on-onecat", SXM2, [with_(COMMAND_R, engine="onecat", model_family="deepseek-mla")], {},
     "mla-needs-llamacpp", "error", "command-r", "engine", "Hopper"),
    ("llamacpp-not-gguf", SXM2, [with_(GGUF, quantization="none")], {},
     "llamacpp-needs-gguf", "error", "deepseek-lite", "quantization", "GGUF files only"),
    ("cuda-13", SXM2, [COMMAND_R], {"cuda_version": "13.0"},
     "cuda-13-on-sm70", "error", None, "cuda_toolkit_version", "compute_70"),
    ("driver-590", SXM2, [COMMAND_R], {"driver_branch": "590"},
     "driver-branch-above-580", "error", None, "nvidia_driver_branch", "branch 590"),
    ("driver-open", SXM2, [COMMAND_R], {"driver_kernel_module": "open"},
     "driver-open-modules", "error", None, "nvidia_driver_kernel_module", "Turing and newer"),
    ("torch-2.11-cu128", SXM2, [COMMAND_R],
     {"engine_versions": {**VERSIONS, "vllm": {"torch_version": "2.11.0", "torch_cuda": "cu128"}}},
     "torch-without-sm70", "error", None, "engine_vllm_torch_cuda", "torch 2.11.0+cu128"),
    ("torch-cu130", PCIE, [FLASH_NEXT_A],
     {"engine_versions": {**VERSIONS, "onecat": {"torch_version": "2.10.0", "torch_cuda": "cu130"}}},
     "torch-without-sm70", "error", None, "engine_onecat_torch_cuda", "cu130"),
    # vLLM's SchedulerConfig (start-up validation, read from vLLM 0.21.0).
    ("mbt-below-len-chunked-off", SXM2, [with_(COMMAND_R, max_num_batched_tokens=4096)], {},
     "chunked-prefill-mbt", "error", "command-r", "max_num_batched_tokens", "is smaller than max_model_len (32768)"),
    ("mbt-set-len-unknown-chunked-off", SXM2,
     [{**{k: v for k, v in COMMAND_R.items() if k != "max_model_len"}, "max_num_batched_tokens": 4096}], {},
     "chunked-prefill-mbt", "error", "command-r", "max_model_len", "max_model_len unset"),
    ("mbt-below-seqs", SXM2, [with_(COMMAND_R, max_num_batched_tokens=32768, max_num_seqs=40000)], {},
     "mbt-below-seqs", "error", "command-r", "max_num_seqs", "must be greater than or equal to max_num_seqs (40000)"),
    ("partial-prefill-chunked-off", SXM2, [with_(COMMAND_R, extra_args=["--max-num-partial-prefills", "2"])], {},
     "partial-prefill", "error", "command-r", "extra_args", "Chunked prefill must be enabled"),
    ("chunked-prefill-switch-with-value", PCIE, [with_(FLASH_NEXT_A, extra_args=["--enable-chunked-prefill=false"])],
     {}, "invalid-value", "error", "flash-next-a", "extra_args", "ignored explicit argument"),
    ("torch-2.15-cu126-unknown", SXM2, [COMMAND_R],
     {"engine_versions": {**VERSIONS, "vllm": {"torch_version": "2.15.0", "torch_cuda": "cu126"}}},
     "torch-sm70-unknown", "warning", None, "engine_vllm_torch_cuda", "the binary audit after install decides"),
    # Memory.
    ("gpu-memory-zero", SXM2, [with_(COMMAND_R, gpu_memory_utilization=0)], {},
     "gpu-memory-utilization", "error", "command-r", "gpu_memory_utilization", "outside (0, 1]"),
    ("gpu-memory-above-one", SXM2, [with_(COMMAND_R, gpu_memory_utilization=1.5)], {},
     "gpu-memory-utilization", "error", "command-r", "gpu_memory_utilization", "1.5"),
    ("host-ram-two-flash-next", with_(PCIE, ram_gb=128), [FLASH_NEXT_A, FLASH_NEXT_B], {},
     "host-ram", "warning", None, "volta_server.ram_gb", "172 GB"),
    # Security.
    ("bind-all-interfaces", SXM2, [with_(COMMAND_R, extra_args=["--host", ALL_INTERFACES])], {},
     "bind-non-loopback", "error", "command-r", "extra_args", "--host 0.0.0.0"),
    ("bind-llamacpp-ipv6-any", SXM2, [with_(GGUF, extra_args=["--host=::"])], {},
     "bind-non-loopback", "error", "deepseek-lite", "extra_args", "--host ::"),
    ("no-api-key", SXM2, [COMMAND_R], {"generate_keys": False, "keyed_instances": ["other"]},
     "no-api-key", "error", "command-r", "api_gateway_keys", "no API key"),
    ("api-key-in-argv", SXM2, [with_(COMMAND_R, extra_args=["--api-key", "sk-123"])], {},
     "secret-in-plan", "error", "command-r", "extra_args", "--api-key"),
    ("api-key-in-env", SXM2, [with_(COMMAND_R, env={"VLLM_API_KEY": "sk-123"})], {},
     "secret-in-plan", "error", "command-r", "env", "VLLM_API_KEY"),
    ("managed-flag-tp", SXM2, [with_(COMMAND_R, extra_args=["--tensor-parallel-size", "2"])], {},
     "managed-flag", "error", "command-r", "extra_args", "set tensor_parallel instead"),
    ("managed-env-visible-devices", SXM2, [with_(COMMAND_R, env={"CUDA_VISIBLE_DEVICES": "0"})], {},
     "managed-flag", "error", "command-r", "env", "set gpus instead"),
    ("deprecated-attention-env", SXM2, [with_(COMMAND_R, env={"VLLM_ATTENTION_BACKEND": "TRITON_ATTN"})], {},
     "deprecated-env", "warning", "command-r", "env", "ignores it"),
    # Inventory shape.
    ("unknown-engine", SXM2, [with_(COMMAND_R, engine="sglang")], {},
     "unknown-value", "error", "command-r", "engine", "'sglang' is not known"),
    ("unknown-family", SXM2, [with_(COMMAND_R, model_family="mamba")], {},
     "unknown-value", "error", "command-r", "model_family", "'mamba'"),
    ("unknown-quantization", SXM2, [with_(COMMAND_R, quantization="int3")], {},
     "unknown-value", "error", "command-r", "quantization", "'int3'"),
    ("unknown-kv-dtype", SXM2, [with_(COMMAND_R, kv_cache_dtype="fp4")], {},
     "unknown-value", "error", "command-r", "kv_cache_dtype", "'fp4'"),
    ("duplicate-name", SXM2, [COMMAND_R, with_(GGUF, name="command-r")], {},
     "duplicate-name", "error", "command-r", "name", "volta-<name>.service"),
    ("missing-model", SXM2, [{k: v for k, v in COMMAND_R.items() if k != "model"}], {},
     "missing-field", "error", "command-r", "model", "model is not set"),
    ("missing-port", SXM2, [{k: v for k, v in COMMAND_R.items() if k != "port"}], {},
     "missing-field", "error", "command-r", "port", "port is not set"),
    ("missing-name", SXM2, [{k: v for k, v in COMMAND_R.items() if k != "name"}], {},
     "missing-field", "error", "#0", "name", "name is not set"),
    ("typo-field", SXM2, [with_(COMMAND_R, tensor_paralel=4)], {},
     "unknown-field", "error", "command-r", "tensor_paralel", "did you mean tensor_parallel?"),
    ("typo-field-max-model-len", SXM2, [with_(COMMAND_R, max_model_lenght=8192)], {},
     "unknown-field", "error", "command-r", "max_model_lenght", "did you mean max_model_len?"),
    ("typo-field-warn", SXM2, [with_(COMMAND_R, max_model_lenght=8192)], {"unknown_mode": "warn"},
     "unknown-field", "warning", "command-r", "max_model_lenght", "did you mean max_model_len?"),
    # The checks preflight makes on the controller (preflight=..., built by the action plugin).
    ("typo-variable", SXM2, [COMMAND_R], {"preflight": {"variables": ["firewall_api_cidr", "firewall_ssh_cidrs"]}},
     "unknown-variable", "error", None, "firewall_api_cidr", "did you mean firewall_api_cidrs?"),
    ("typo-variable-warn", SXM2, [COMMAND_R],
     {"preflight": {"variables": ["firewall_api_cidr"]}, "unknown_mode": "warn"},
     "unknown-variable", "warning", None, "firewall_api_cidr", "volta_unknown_variables: warn"),
    ("unknown-mode", SXM2, [COMMAND_R], {"unknown_mode": "ignore"},
     "invalid-value", "error", None, "volta_unknown_variables", "neither error nor warn"),
    ("driver-version-other-branch", SXM2, [COMMAND_R],
     {"preflight": {"driver_version": "590.44.01", "driver_branch": "580"}},
     "driver-version-branch", "error", None, "nvidia_driver_version",
     "nvidia_driver_version 590.44.01 is not a version of driver branch 580"),
    ("engine-version-latest", SXM2, [COMMAND_R], {"preflight": {"engine_pins": {"engine_vllm_version": "latest"}}},
     "engine-version", "error", None, "engine_vllm_version", "'latest' is not a release version"),
    ("engine-version-not-released", SXM2, [COMMAND_R],
     {"preflight": {"engine_pins": {"engine_vllm_version": "0.99.0"}, "releases": {"engine_vllm_version": {
         "project": "vllm", "index": "https://pypi.org/simple", "versions": ["0.19.1", "0.21.0", "0.22.0"]}}}},
     "engine-version", "error", None, "engine_vllm_version",
     "engine_vllm_version 0.99.0 is not a release of vllm on https://pypi.org/simple (newest there: 0.19.1, 0.21.0, "
     "0.22.0)"),
    ("engine-index-unread", SXM2, [COMMAND_R],
     {"preflight": {"engine_pins": {"engine_vllm_version": "0.99.0"}, "releases": {"engine_vllm_version": {
         "project": "vllm", "index": "https://pypi.org/simple", "versions": None, "error": "URLError: timed out"}}}},
     "engine-index-unread", "warning", None, "engine_vllm_version", "could not be read from the controller"),
    ("nvlink-island-beyond-gpus", with_(SXM2, gpu_count=8, nvlink_islands=[[0, 1, 2, 3], [4, 5, 6, 8]]),
     [with_(COMMAND_R, gpus=[0, 1, 2, 3])], {},
     "invalid-value", "error", None, "volta_server.nvlink_islands", "names GPU 8, but the host has 8 GPUs"),
    ("api-cidrs-empty", SXM2, [COMMAND_R],
     {"preflight": {}, "gateway": {"firewall_enabled": True, "api_cidrs": []}},
     "api-cidrs-empty", "error", None, "firewall_api_cidrs", "the API is reachable by no one"),
    ("onecat-sha256-fake", SXM2, [COMMAND_R], {"preflight": {"sha256": {"engine_onecat_sha256": "a" * 64}}},
     "pin-format", "error", None, "engine_onecat_sha256", "not a sha256 (64 hex digits, not a placeholder)"),
    ("sha256-short", SXM2, [COMMAND_R], {"preflight": {"sha256": {"engine_llamacpp_source_sha256": "abc123"}}},
     "pin-format", "error", None, "engine_llamacpp_source_sha256", "'abc123' is not a sha256"),
    ("revision-fake", SXM2, [COMMAND_R],
     {"preflight": {"models": {"qwen": {"hf": {"repo": "Qwen/Qwen2.5-72B-Instruct", "revision": "1" * 40}}}}},
     "pin-format", "error", None, "volta_models.qwen.hf.revision", "not a commit id"),
    ("gpus-not-ints", SXM2, [with_(COMMAND_R, gpus="0-3")], {},
     "invalid-value", "error", "command-r", "gpus", "not a list of GPU indexes"),
    # allow: overrides.
    ("allow-not-overridable", SXM2, [with_(COMMAND_R, dtype="bf16", allow=[{"rule": "bf16-on-sm70", "reason": "x"}])],
     {}, "allow-not-overridable", "error", "command-r", "allow[0]", "cannot be allowed"),
    ("allow-without-reason", PCIE, [with_(FLASH_NEXT_A, allow=[{"rule": "nvfp4-moe-tp"}])], {},
     "allow-invalid", "error", "flash-next-a", "allow[0]", "non-empty reason"),
    ("allow-unknown-rule", PCIE, [with_(FLASH_NEXT_A, allow=[{"rule": "no-such-rule", "reason": "x"}])], {},
     "allow-invalid", "error", "flash-next-a", "allow[0]", "known rule id"),
    ("allow-unused", PCIE, [with_(FLASH_NEXT_A, allow=[{"rule": "nvfp4-moe-tp", "reason": "tested on 1.6"}])], {},
     "allow-unused", "warning", "flash-next-a", "allow[0]", "matches no finding"),
    # extra_args read as the pinned vLLM parser reads them (recorded flag list of vLLM 0.21.0).
    ("unknown-flag", SXM2, [with_(COMMAND_R, extra_args=["--enforce-eagerly"])], {},
     "unknown-flag", "error", "command-r", "extra_args", "--enforce-eagerly is not an option of vllm serve 0.21.0"),
    ("flag-not-recorded", PCIE, [with_(FLASH_NEXT_A, extra_args=["--onecat-only-flag"])], {},
     "flag-not-recorded", "warning", "flash-next-a", "extra_args", "--onecat-only-flag is not an option"),
    ("config-file-flag", SXM2, [with_(COMMAND_R, extra_args=["--config", "/srv/x.yaml"])], {},
     "config-file-flag", "error", "command-r", "extra_args", "--config reads more options from a YAML file."),
    ("secret-in-env", SXM2, [with_(COMMAND_R, env={"HF_TOKEN": "hf_x"})], {},
     "secret-in-env", "warning", "command-r", "env", "env sets HF_TOKEN, which looks like a secret."),
    ("example-key", PCIE, [], {"key_sha256": {"api_gateway_host_key": SIM_QWEN72B_KEY_SHA256}},
     "example-key", "error", None, "api_gateway_host_key", "is a published example key (from inventories/sim"),
    # The gateway in plain HTTP for networks outside private ranges (_gateway).
    ("weak-api-key", PCIE, [], {"gateway": {"key_shapes": {"api_gateway_keys[m1]": "a" * 31}}},
     "weak-api-key", "error", None, "api_gateway_keys[m1]", "is 31 characters long, shorter than 32"),
    ("plain-http-public", PCIE, [], {"gateway": {"api_cidrs": ["0.0.0.0/0"]}},
     "plain-http-public", "error", None, "api_gateway_tls_certificate", "open to 0.0.0.0/0 over plain HTTP"),
    ("plain-http-allowed", PCIE, [], {"gateway": {"api_cidrs": ["0.0.0.0/0"], "allow_plain_http": True}},
     "plain-http-allowed", "warning", None, "api_gateway_tls_certificate", "open to 0.0.0.0/0 over plain HTTP"),
    # Detected GPUs differ from volta_server.
    ("gpu-facts-mismatch", SXM2, [], {"gpu_facts": {
        "status": "ok", "gpu_count": 8, "nvlink_islands": [], "min_compute_capability": "7.0",
        "driver_version": "580.95.05", "kernel_module": "proprietary",
        "gpus": [{"name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}] * 8}},
     "gpu-facts-mismatch", "error", None, "volta_server.gpu_count", "the host has 8"),
    # Platform (plugin_utils/_python.py): glibc and the engines' Python.
    ("onecat-on-debian12-glibc", PCIE, [FLASH_NEXT_A],
     {"platform": {"host": {"distribution": "Debian", "version": "12.8", "glibc": "glibc 2.36"}}},
     "glibc-too-old", "error", "flash-next-a", "engine", "but Debian 12.8 has glibc 2.36"),
    ("onecat-glibc-not-read", PCIE, [FLASH_NEXT_A],
     {"platform": {"host": {"distribution": None, "version": None, "glibc": None,
                            "note": "controller only: volta_preflight_detect=false"}}},
     "platform-unchecked", "warning", "flash-next-a", "engine", "controller only"),
    ("vllm-explicit-python39", SXM2, [COMMAND_R], {"platform": {"engine_pythons": {"vllm": "python3.9"}}},
     "python-unsupported", "error", None, "engine_python", "<3.15,>=3.10"),
]


@pytest.mark.parametrize(
    ("server", "instances", "settings", "rule", "severity", "instance", "field", "text"),
    [case[1:] for case in INVALID],
    ids=[case[0] for case in INVALID],
)
def test_rule_fires_with_host_instance_field(server, instances, settings, rule, severity, instance, field, text):
    report = run(server, instances, host="lab-host", **settings)
    hits = [f for f in report["findings"] if f["rule"] == rule]
    assert hits, f"{rule} not reported; findings: {[f['message'] for f in report['findings']]}"
    hit = hits[0]
    assert hit["severity"] == severity
    assert hit["field"] == field
    assert hit["instance"] == (instance if instance != "#0" else "#0")
    message = hit["message"]
    assert message.startswith("lab-host: ")
    assert (f"instance {instance}" if instance else "host-wide") in message
    assert f"field {field}" in message
    assert text in message
    assert " Why: " in message
    assert " Fix: " in message
    assert report["errors"] == sum(1 for f in report["findings"] if f["severity"] == "error")
    if severity == "error":
        assert report["errors"] >= 1


def test_every_rule_has_a_test_case():
    # The model rules (_model_rules.MODEL_RULES) have theirs in test_model_rules.py.
    # The multi-host rules (_cluster.CLUSTER_RULES) have theirs in test_cluster.py.
    # The GPU health rules (_health_rules.HEALTH_RULES) have theirs in test_health_rules.py.
    # service-port-cluster and exporter-port-collision have theirs in test_rules_serving.py.
    tested = ({case[4] for case in INVALID} | set(MODEL_RULES) | set(CLUSTER_RULES) | set(HEALTH_RULES)
              | {"service-port-cluster", "exporter-port-collision"})
    assert set(RULES) - tested == set()


def test_overridable_rules_are_the_unverified_ones():
    assert set(OVERRIDABLE) == {"nvfp4-moe-tp", "qwen-linear-pp"}


def test_allowed_unverified_rule_is_downgraded_with_reason():
    reason = "1Cat-vLLM 1.6 added TP8 for NVFP4 MoE; verified on server-b"
    instance = with_(
        FLASH_NEXT_A, gpus=list(range(8)), tensor_parallel=8, allow=[{"rule": "nvfp4-moe-tp", "reason": reason}]
    )
    report = run(PCIE, [instance])
    assert report["errors"] == 0
    [hit] = only(report, "allowed")
    assert hit["rule"] == "nvfp4-moe-tp"
    assert hit["reason"] == reason
    assert hit["message"].endswith(f"Allowed on purpose: {reason}")
    assert report["plan"]["instances"][0]["allowed"] == [{"rule": "nvfp4-moe-tp", "reason": reason}]


def test_all_errors_are_reported_not_just_the_first():
    broken = [
        with_(COMMAND_R, dtype="bfloat16", extra_args=["--host", ALL_INTERFACES]),
        with_(GGUF, gpus=[8, 12], port=8001),
    ]
    report = run(SXM2, broken, cuda_version="13.0", generate_keys=False)
    rules = {f["rule"] for f in only(report, "error")}
    assert {
        "bf16-on-sm70",
        "bind-non-loopback",
        "gpu-out-of-range",
        "port-collision",
        "cuda-13-on-sm70",
        "no-api-key",
    } <= rules
    assert report["errors"] >= 7  # two no-api-key findings


def test_tp_span_suggestion_is_a_valid_grouping():
    report = run(SXM2, [with_(QWEN72B, gpus=[0, 1, 4, 5, 2, 3, 6, 7])])
    [hit] = report["findings"]
    assert "order gpus as [0, 1, 2, 3, 4, 5, 6, 7]" in hit["message"]
    fixed = run(SXM2, [with_(QWEN72B, gpus=[0, 1, 2, 3, 4, 5, 6, 7])])
    assert fixed["findings"] == []


def test_pcie_only_host_has_no_nvlink_warning():
    report = run(PCIE, [with_(COMMAND_R, gpus=[2, 3, 4, 5])])
    assert report["findings"] == []


def test_disabled_instance_may_share_gpus_and_ports():
    report = run(SXM2, [QWEN72B, with_(COMMAND_R, enabled=False, port=8002)])
    assert report["findings"] == []
    assert report["plan"]["gateway_ports"] == [8002]
    assert [i["enabled"] for i in report["plan"]["instances"]] == [True, False]


def test_plan_names_the_secrets_directory_of_its_key_files():
    default = run(SXM2, [COMMAND_R, with_(GGUF, gpus=[8, 9], port=8003)])["plan"]
    assert default["secrets_dir"] == "/etc/volta/secrets"
    moved = run(SXM2, [COMMAND_R, with_(GGUF, gpus=[8, 9], port=8003)], secrets_dir="/srv/volta/keys")["plan"]
    assert moved["secrets_dir"] == "/srv/volta/keys"
    assert [i["environment_file"] or i["api_key_file"] for i in moved["instances"]] == [
        "/srv/volta/keys/command-r.env", "/srv/volta/keys/deepseek-lite.key"]


def test_profile_override_changes_the_default():
    report = run(SXM2, [COMMAND_R], profiles={"vllm": {"gpu_memory_utilization": 0.85}})
    argv = report["plan"]["instances"][0]["argv"]
    assert argv[argv.index("--gpu-memory-utilization") + 1] == "0.85"


def test_bad_profile_override_is_an_error():
    report = run(SXM2, [COMMAND_R], profiles={"sglang": {}, "vllm": {"colour": "red"}})
    assert [f["rule"] for f in report["findings"]] == ["invalid-value", "invalid-value"]
    assert all("preflight_engine_profiles" in f["message"] for f in report["findings"])


def test_newer_gpu_skips_the_sm70_rules():
    ampere = with_(SXM2, compute_capability="8.0")
    report = run(ampere, [with_(COMMAND_R, dtype="bfloat16", quantization="awq")], cuda_version="13.0")
    assert report["findings"] == []


# ------------------------------------------------------------------------------------------------
# The exact plan of the working configurations, written out by hand from the facts page.
# ------------------------------------------------------------------------------------------------

VLLM = "/opt/volta/engines/vllm/current/venv/bin/vllm"
ONECAT = "/opt/volta/engines/onecat/current/venv/bin/vllm"
LLAMA = "/opt/volta/engines/llamacpp/current/bin/llama-server"

EXPECTED_ARGV = {
    "command-r": [
        VLLM, "serve", "/srv/models/command-r-32b",
        "--served-model-name", "command-r",
        "--host", "127.0.0.1", "--port", "18001",
        "--dtype", "half",
        "--attention-backend", "TRITON_ATTN",
        "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
        "--gpu-memory-utilization", "0.90",
        "--max-model-len", "32768", "--max-num-batched-tokens", "32768", "--max-num-seqs", "16",
        "--enforce-eager", "--no-enable-chunked-prefill",
    ],
    "qwen72b": [
        VLLM, "serve", "/srv/models/qwen2.5-72b-instruct",
        "--served-model-name", "qwen2.5-72b",
        "--host", "127.0.0.1", "--port", "18002",
        "--dtype", "half",
        "--attention-backend", "TRITON_ATTN",
        "--tensor-parallel-size", "4", "--pipeline-parallel-size", "2",
        "--gpu-memory-utilization", "0.90",
        "--max-model-len", "32768", "--max-num-batched-tokens", "32768",
        "--enforce-eager", "--no-enable-chunked-prefill",
    ],
    "deepseek-lite": [
        LLAMA,
        "-m", "/srv/models/DeepSeek-V2-Lite-Chat-Q8_0.gguf",
        "--alias", "deepseek-v2-lite",
        "--host", "127.0.0.1", "--port", "18003",
        "-c", "32768",
        "-ngl", "999",
        "--tensor-split", "1,1",
        "--api-key-file", "/etc/volta/secrets/deepseek-lite.key",
        "--metrics",
    ],
    "flash-next-a": [
        ONECAT, "serve", "/srv/models/Qwen3.8-Flash-Next-NVFP4",
        "--served-model-name", "qwen3.8-flash-next",
        "--host", "127.0.0.1", "--port", "18001",
        "--dtype", "half",
        "--attention-backend", "FLASH_ATTN_V100",
        "--tensor-parallel-size", "4", "--pipeline-parallel-size", "1",
        "--gpu-memory-utilization", "0.95",
        "--kv-cache-dtype", "fp8",
        "--max-model-len", "1048576", "--max-num-batched-tokens", "4096", "--max-num-seqs", "4",
        "--enable-chunked-prefill",
    ],
}  # fmt: skip
EXPECTED_VISIBLE = {
    "command-r": "0,1,2,3",
    "qwen72b": "0,1,2,3,4,5,6,7",
    "deepseek-lite": "8,9",
    "flash-next-a": "0,1,2,3",
}
CASES = {"command-r": (SXM2, COMMAND_R), "qwen72b": (SXM2, QWEN72B), "deepseek-lite": (SXM2, GGUF),
         "flash-next-a": (PCIE, FLASH_NEXT_A)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED_ARGV))
def test_exact_plan_of_working_configurations(name):
    server, instance = CASES[name]
    [entry] = run(server, [instance])["plan"]["instances"]
    assert entry["argv"] == EXPECTED_ARGV[name]
    assert entry["unit"] == f"volta-{name}.service"
    assert entry["bind_host"] == "127.0.0.1"
    assert entry["public_port"] + 10000 == entry["backend_port"]
    assert entry["cuda_visible_devices"] == EXPECTED_VISIBLE[name]
    ranks_on_lo = {"NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo"}
    multi_gpu_vllm = instance["engine"] != "llamacpp" and "," in EXPECTED_VISIBLE[name]
    assert entry["env"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": EXPECTED_VISIBLE[name],
                            **(ranks_on_lo if multi_gpu_vllm else {})}
    if instance["engine"] == "llamacpp":
        assert entry["api_key_file"] == f"/etc/volta/secrets/{name}.key"
        assert entry["environment_file"] is None
    else:
        assert entry["environment_file"] == f"/etc/volta/secrets/{name}.env"
        assert entry["api_key_env"] == "VLLM_API_KEY"
        assert entry["api_key_file"] is None


def test_mtp_renders_a_speculative_config():
    [entry] = run(PCIE, [with_(FLASH_NEXT_A, kv_cache_dtype="auto", mtp=True, max_model_len=186742)])["plan"][
        "instances"
    ]
    argv = entry["argv"]
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == {"method": "mtp", "num_speculative_tokens": 1}


def test_extra_args_attention_backend_replaces_the_profile_one():
    [entry] = run(PCIE, [with_(FLASH_NEXT_A, extra_args=["--attention-backend", "TRITON_ATTN", "--seed", 7])])[
        "plan"
    ]["instances"]
    argv = entry["argv"]
    assert argv.count("--attention-backend") == 1
    assert argv[argv.index("--attention-backend") + 1] == "TRITON_ATTN"
    assert argv[-2:] == ["--seed", "7"]


def test_engines_root_and_instance_env_and_backend_port():
    [entry] = run(
        SXM2,
        [with_(COMMAND_R, backend_port=9001, env={"VLLM_NCCL_SO_PATH": "/opt/nccl/libnccl.so.2"})],
        engines_root="/srv/engines/",
    )["plan"]["instances"]
    assert entry["argv"][0] == "/srv/engines/vllm/current/venv/bin/vllm"
    assert entry["argv"][entry["argv"].index("--port") + 1] == "9001"
    assert entry["env"]["VLLM_NCCL_SO_PATH"] == "/opt/nccl/libnccl.so.2"


def test_vllm_flags_exist_in_vllm_0_21_0():
    derived = json.loads(VLLM_FLAGS.read_text(encoding="utf-8"))
    known = set(derived["options"])
    for options in derived["options"].values():
        known.update(options.get("aliases") or [])
    for name in ("command-r", "qwen72b", "flash-next-a"):
        flags = [arg for arg in EXPECTED_ARGV[name] if arg.startswith("--")]
        assert set(flags) <= known, set(flags) - known
    assert "TRITON_ATTN" in derived["attention_backends"]
    choices = derived["options"]["--dtype"]["choices"]
    assert "half" in choices


def test_plan_is_deterministic_and_json_serialisable():
    first = run(SXM2, [QWEN72B, with_(COMMAND_R, enabled=False), GGUF])
    second = run(SXM2, [QWEN72B, with_(COMMAND_R, enabled=False), GGUF])
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_api_key_never_in_argv_or_env():
    keyed = ["qwen72b", "deepseek-lite", "command-r"]
    report = run(SXM2, [QWEN72B, GGUF, COMMAND_R], generate_keys=False, keyed_instances=keyed)
    for entry in report["plan"]["instances"]:
        assert "--api-key" not in entry["argv"]
        assert not any("API_KEY" in key for key in entry["env"])


def test_instances_with_errors_are_left_out_of_the_plan():
    report = run(SXM2, [COMMAND_R, with_(GGUF, engine="sglang"), {"engine": "vllm"}, "not-a-mapping"])
    assert [entry["name"] for entry in report["plan"]["instances"]] == ["command-r"]
    assert report["errors"] >= 4


# ------------------------------------------------------------------------------------------------
# vLLM's start-up validation (SchedulerConfig of vLLM 0.21.0): the rule's verdict and vLLM's own
# message, quoted. The same argvs go through the real release in tests/real/test_vllm_argv.py.
# (case id, instance, rule or None, vLLM's message)
# ------------------------------------------------------------------------------------------------

MBT_LEN_TEXT = (
    "max_num_batched_tokens ({}) is smaller than max_model_len ({}). This effectively limits the maximum "
    "sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
    "max_num_batched_tokens or decrease max_model_len."
)
SCHEDULER = [
    ("vllm-profile-mbt-unset", COMMAND_R, None, None),
    ("vllm-profile-mbt-equals-len", with_(COMMAND_R, max_num_batched_tokens=32768), None, None),
    ("vllm-profile-mbt-below-len", with_(COMMAND_R, max_num_batched_tokens=4096),
     "chunked-prefill-mbt", MBT_LEN_TEXT.format(4096, 32768)),
    ("vllm-chunked-on-in-extra-args", with_(COMMAND_R, max_num_batched_tokens=4096,
                                            extra_args=["--enable-chunked-prefill"]), None, None),
    ("vllm-chunked-on-underscore", with_(COMMAND_R, max_num_batched_tokens=4096,
                                         extra_args=["--enable_chunked_prefill"]), None, None),
    ("vllm-chunked-on-then-off-last-wins", with_(COMMAND_R, max_num_batched_tokens=4096, extra_args=[
        "--enable-chunked-prefill", "--no-enable-chunked-prefill"]),
     "chunked-prefill-mbt", MBT_LEN_TEXT.format(4096, 32768)),
    ("onecat-profile-1m", FLASH_NEXT_A, None, None),
    ("onecat-chunked-off-in-extra-args", with_(FLASH_NEXT_A, extra_args=["--no-enable-chunked-prefill"]),
     "chunked-prefill-mbt", MBT_LEN_TEXT.format(4096, 1048576)),
    ("onecat-seqs-above-mbt", with_(FLASH_NEXT_A, max_model_len=8192, max_num_seqs=5000),
     "mbt-below-seqs", "max_num_batched_tokens (4096) must be greater than or equal to max_num_seqs (5000)."),
    ("vllm-chunked-on-default-mbt-below-seqs", with_(COMMAND_R, max_num_seqs=4096, extra_args=[
        "--enable-chunked-prefill"]), "mbt-below-seqs",
     "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096)."),
    ("vllm-long-partial-above-partial", with_(COMMAND_R, extra_args=["--max-long-partial-prefills", "2"]),
     "partial-prefill",
     "self.max_long_partial_prefills=2 must be less than or equal to self.max_num_partial_prefills=1."),
    ("vllm-threshold-above-len", with_(COMMAND_R, extra_args=[
        "--enable-chunked-prefill", "--max-num-partial-prefills", "2", "--long-prefill-token-threshold", "40000"]),
     "partial-prefill", "long_prefill_token_threshold (40000) cannot be greater than the max_model_len (32768)."),
]  # fmt: skip


@pytest.mark.parametrize(("instance", "rule", "vllm_text"), [c[1:] for c in SCHEDULER], ids=[c[0] for c in SCHEDULER])
def test_scheduler_rules_quote_vllm(instance, rule, vllm_text):
    server = PCIE if instance["engine"] == "onecat" else SXM2
    report = run(server, [instance], host="lab-host")
    hits = [f for f in report["findings"] if f["rule"] in ("chunked-prefill-mbt", "mbt-below-seqs", "partial-prefill")]
    if rule is None:
        assert hits == []
        return
    [hit] = hits
    assert hit["rule"] == rule
    assert hit["severity"] == "error"
    assert rule not in OVERRIDABLE
    assert f"'{vllm_text}'" in hit["message"]
    assert hit["message"].startswith(f"lab-host: instance {instance['name']}: field ")


def _argv(instance, **settings):
    server = PCIE if instance["engine"] == "onecat" else SXM2
    [entry] = run(server, [instance], **settings)["plan"]["instances"]
    return entry["argv"]


def _flag(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


@pytest.mark.parametrize(
    ("instance", "settings", "mbt"),
    [
        (COMMAND_R, {}, "32768"),  # chunked off: vLLM's default max(max_model_len, 2048)
        (with_(COMMAND_R, max_model_len=1024), {}, "2048"),
        (with_(COMMAND_R, max_model_len=1024, extra_args=["--performance-mode", "throughput"]), {}, "4096"),
        (with_(COMMAND_R, max_model_len=1024, max_num_seqs=1), {}, "1024"),  # at most seqs x len
        ({k: v for k, v in COMMAND_R.items() if k != "max_model_len"}, {}, None),  # vLLM uses the model's length
        (with_(COMMAND_R, extra_args=["--enable-chunked-prefill"]), {}, None),  # vLLM's own 2048
        (with_(COMMAND_R, max_num_batched_tokens=65536), {}, "65536"),
        ({k: v for k, v in FLASH_NEXT_A.items() if k != "max_num_batched_tokens"}, {}, "4096"),  # onecat profile
        (COMMAND_R, {"profiles": {"vllm": {"max_num_batched_tokens": 40000}}}, "40000"),
        (FLASH_NEXT_A, {"profiles": {"onecat": {"max_num_batched_tokens": None}}}, "4096"),  # the instance's own
    ],
)
def test_rendered_max_num_batched_tokens(instance, settings, mbt):
    assert _flag(_argv(instance, **settings), "--max-num-batched-tokens") == mbt


def test_onecat_profile_is_the_1m_reference():
    instance = {k: v for k, v in FLASH_NEXT_A.items() if k not in ("gpu_memory_utilization", "max_num_batched_tokens")}
    argv = _argv(instance)
    assert "--enforce-eager" not in argv  # CUDA graphs on
    assert "--enable-chunked-prefill" in argv
    assert "--no-enable-chunked-prefill" not in argv
    assert _flag(argv, "--gpu-memory-utilization") == "0.95"
    assert _flag(argv, "--attention-backend") == "FLASH_ATTN_V100"
    assert _flag(argv, "--max-num-batched-tokens") == "4096"


def test_bad_profile_max_num_batched_tokens_is_an_error():
    report = run(SXM2, [COMMAND_R], profiles={"vllm": {"max_num_batched_tokens": "4k"}})
    [hit] = report["findings"]
    assert hit["field"] == "preflight_engine_profiles"
    assert "max_num_batched_tokens '4k' is not a positive integer or null" in hit["message"]


@pytest.mark.parametrize(
    ("instance", "fix"),
    [
        (with_(COMMAND_R, max_num_batched_tokens=4096),
         "Fix: remove max_num_batched_tokens (vLLM then raises it to max_model_len); or set max_num_batched_tokens "
         "to at least 32768; or turn chunked prefill on (extra_args: [--enable-chunked-prefill]); or lower "
         "max_model_len to at most 4096."),
        (with_(FLASH_NEXT_A, extra_args=["--no-enable-chunked-prefill"]),
         "Fix: set max_num_batched_tokens to at least 1048576; or drop --no-enable-chunked-prefill from extra_args "
         "(chunked prefill is then on); or lower max_model_len to at most 4096."),
    ],
)
def test_chunked_prefill_mbt_fix_fits_where_the_values_come_from(instance, fix):
    [hit] = [f for f in run(PCIE if instance["engine"] == "onecat" else SXM2, [instance])["findings"]
             if f["rule"] == "chunked-prefill-mbt"]  # fmt: skip
    assert hit["message"].endswith(fix)


def test_the_ranks_of_a_multi_gpu_vllm_instance_stay_on_loopback():
    """The unit allows localhost only (IPAddressDeny=any): NCCL and Gloo must not pick eth0."""
    single = with_(COMMAND_R, name="one", gpus=[0], tensor_parallel=1, port=8010)
    [multi, one] = run(SXM2, [COMMAND_R, single])["plan"]["instances"]
    assert (multi["env"]["NCCL_SOCKET_IFNAME"], multi["env"]["GLOO_SOCKET_IFNAME"]) == ("lo", "lo")
    assert "NCCL_SOCKET_IFNAME" not in one["env"]
    mine = with_(COMMAND_R, env={"NCCL_SOCKET_IFNAME": "ib0"})
    assert run(SXM2, [mine])["plan"]["instances"][0]["env"]["NCCL_SOCKET_IFNAME"] == "ib0"
