# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_services.py: replica services and the gateway's listeners.

The findings of the service rules are in test_plan.py (INVALID, by message); here the plan's shape:
server B of the seeds runs two TP4 instances of one model, which become one service on port 8000.
"""

from __future__ import annotations

import copy

from ansible_collections.volta.serving.plugins.module_utils._services import in_flight, rotation_files, server_line
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

PCIE = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
        "nvlink_islands": [], "ram_gb": 251}
VERSIONS = {"onecat": {"version": "1.5.1", "torch_version": "2.10.0", "torch_cuda": "cu128"},
            "vllm": {"version": "0.21.0", "torch_version": "2.11.0", "torch_cuda": "cu126"}}
REPLICA_A = {
    "name": "flash-next-a", "engine": "onecat", "model": "/srv/models/Qwen3.8-Flash-Next-NVFP4",
    "served_model_name": "qwen3.8-flash-next", "model_family": "moe-nvfp4", "quantization": "nvfp4",
    "gpus": [0, 1, 2, 3], "tensor_parallel": 4, "kv_cache_dtype": "fp8", "mtp": False,
    "gpu_memory_utilization": 0.95, "max_model_len": 1048576, "max_num_batched_tokens": 4096,
    "max_num_seqs": 4, "port": 8001, "service_port": 8000,
}
REPLICA_B = {**REPLICA_A, "name": "flash-next-b", "gpus": [4, 5, 6, 7], "port": 8002}


def plan(instances):
    report = build_report(PlanInputs("server-b", copy.deepcopy(PCIE), copy.deepcopy(instances),
                                     engine_versions=VERSIONS, generate_keys=True))
    assert report["errors"] == 0, [f["message"] for f in report["findings"]]
    return report["plan"]


def test_two_replicas_are_one_service_on_its_port():
    got = plan([REPLICA_A, REPLICA_B])
    assert got["services"] == [{
        "name": "qwen3.8-flash-next", "port": 8000, "key_name": "qwen3.8-flash-next", "engine": "onecat",
        "health_path": "/health", "replicas": ["flash-next-a", "flash-next-b"],
    }]
    assert got["gateway_ports"] == [8000, 8001, 8002]


def test_the_service_listener_balances_over_both_backends_each_in_its_rotation_file():
    service = plan([REPLICA_A, REPLICA_B])["listeners"][0]
    assert service["kind"] == "service"
    assert service["port"] == 8000
    assert service["key_instance"] == "flash-next-a"
    assert service["backends"] == [
        {"instance": "flash-next-a", "address": "127.0.0.1", "port": 18001,
         "rotation_file": "/etc/nginx/volta/rotation/8000-flash-next-a.conf"},
        {"instance": "flash-next-b", "address": "127.0.0.1", "port": 18002,
         "rotation_file": "/etc/nginx/volta/rotation/8000-flash-next-b.conf"},
    ]


def test_each_replica_keeps_its_own_port_with_the_service_key():
    listeners = plan([REPLICA_A, REPLICA_B])["listeners"]
    own = [(x["port"], x["kind"], x["key_name"], [b["port"] for b in x["backends"]]) for x in listeners[1:]]
    assert own == [(8001, "instance", "qwen3.8-flash-next", [18001]), (8002, "instance", "qwen3.8-flash-next", [18002])]


def test_replicas_share_the_first_replica_generated_key_and_a_plain_instance_keeps_its_own():
    plain = {**REPLICA_A, "name": "solo", "served_model_name": "solo", "service_port": None, "gpus": [4, 5, 6, 7],
             "port": 8003}
    plain.pop("service_port")
    entries = {e["name"]: e for e in plan([REPLICA_A, plain])["instances"]}
    assert (entries["flash-next-a"]["key_name"], entries["flash-next-a"]["key_owner"]) == (
        "qwen3.8-flash-next", "flash-next-a")
    assert (entries["solo"]["key_name"], entries["solo"]["key_owner"], entries["solo"]["service_port"]) == (
        "solo", "solo", None)
    both = {e["name"]: e for e in plan([REPLICA_A, REPLICA_B])["instances"]}
    assert both["flash-next-b"]["key_owner"] == "flash-next-a"


def test_a_disabled_replica_is_not_a_backend():
    got = plan([REPLICA_A, {**REPLICA_B, "enabled": False}])
    assert got["services"][0]["replicas"] == ["flash-next-a"]
    assert [b["instance"] for b in got["listeners"][0]["backends"]] == ["flash-next-a"]
    assert got["gateway_ports"] == [8000, 8001]


def test_server_lines_in_and_out_of_rotation():
    assert server_line("127.0.0.1", 18001) == "server 127.0.0.1:18001 max_fails=1 fail_timeout=5s;\n"
    assert server_line("127.0.0.1", 18001, in_rotation=False) == "server 127.0.0.1:18001 down;\n"
    assert server_line("::1", 18001) == "server [::1]:18001 max_fails=1 fail_timeout=5s;\n"


def test_rotation_files_are_written_in_rotation():
    files = rotation_files(plan([REPLICA_A, REPLICA_B])["listeners"])
    assert files == [
        {"path": "/etc/nginx/volta/rotation/8000-flash-next-a.conf",
         "content": "server 127.0.0.1:18001 max_fails=1 fail_timeout=5s;\n"},
        {"path": "/etc/nginx/volta/rotation/8000-flash-next-b.conf",
         "content": "server 127.0.0.1:18002 max_fails=1 fail_timeout=5s;\n"},
    ]


# Exposition text as the real servers write it (labels as vLLM 0.21.0 sets them; llama-server has none).
VLLM_METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} 2.0
vllm:num_requests_running_other{engine="0"} 9.0
vllm:generation_tokens_total{engine="0",model_name="qwen"} 120.0
"""
LLAMACPP_METRICS = """# HELP llamacpp:requests_processing Number of requests processing
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
"""


def test_in_flight_is_running_plus_waiting():
    assert in_flight(VLLM_METRICS, "vllm") == 5
    assert in_flight(VLLM_METRICS, "onecat") == 5
    assert in_flight(LLAMACPP_METRICS, "llamacpp") == 1


def test_in_flight_without_the_gauges_is_unknown_not_zero():
    assert in_flight("vllm:generation_tokens_total 3.0\n", "vllm") is None
    assert in_flight(VLLM_METRICS, "llamacpp") is None


def test_replicas_of_a_service_with_two_are_drained_a_lone_replica_and_a_plain_instance_are_not():
    both = {e["name"]: e for e in plan([REPLICA_A, REPLICA_B])["instances"]}
    assert [(e["drain"], e["rotation_file"]) for e in both.values()] == [
        (True, "/etc/nginx/volta/rotation/8000-flash-next-a.conf"),
        (True, "/etc/nginx/volta/rotation/8000-flash-next-b.conf")]
    alone = plan([REPLICA_A])["instances"][0]
    assert (alone["drain"], alone["rotation_file"]) == (False, "/etc/nginx/volta/rotation/8000-flash-next-a.conf")
    plain = {**REPLICA_A}
    plain.pop("service_port")
    entry = plan([plain])["instances"][0]
    assert (entry["drain"], entry["rotation_file"]) == (False, None)
