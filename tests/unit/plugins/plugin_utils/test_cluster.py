"""An instance over several hosts (plugin_utils/_cluster.py): the preflight rules, asserted by their
messages, and the plan each member gets (the head's vLLM over Ray, every member's Ray node)."""

from __future__ import annotations

import copy

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import (
    CLUSTER_RULES,
    missing_members,
    ray_port_numbers,
)
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import literal
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

PORTS = literal("engine_service", "engine_service_ray_ports")
SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "ram_gb": 512}
PINS = {"vllm": {"version": "0.21.0", "torch_version": "2.11.0", "torch_cuda": "cu126"}}
BIG = {
    "name": "big",
    "engine": "vllm",
    "model": "/srv/models/qwen2.5-72b-instruct",
    "gpus": [0, 1, 2, 3],
    "tensor_parallel": 4,
    "pipeline_parallel": 2,
    "max_model_len": 8192,
    "port": 8010,
    "cluster": {"members": ["head-a", "worker-b"], "interface": "ens1f0"},
}


def member(instance=None, **over):
    instance = instance or BIG
    info = {"known": True, "in_play": True, "instances": {instance["name"]: instance}, "server": dict(SERVER),
            "engine": copy.deepcopy(PINS), "interfaces": {"lo": "127.0.0.1", "ens1f0": None}, "clusters": ["big"]}
    info.update(over)
    return info


def members(head=None, worker=None):
    head = head or member(interfaces={"lo": "127.0.0.1", "ens1f0": "10.0.0.1"})
    worker = worker or member(interfaces={"lo": "127.0.0.1", "ens1f0": "10.0.0.2"})
    return {"head-a": head, "worker-b": worker}


def run(host="head-a", instance=None, cluster_members=None, **settings):
    instance = instance or BIG
    return build_report(PlanInputs(host, dict(SERVER), [copy.deepcopy(instance)], engine_versions=PINS,
                                   generate_keys=True,
                                   cluster_members=members() if cluster_members is None else cluster_members,
                                   ray_ports=PORTS, **settings))


def with_(inst, **fields):
    out = copy.deepcopy(inst)
    out.update(fields)
    return out


def worker_with(**fields):
    theirs = with_(BIG, **fields)
    return members(worker=member(theirs, interfaces={"ens1f0": "10.0.0.2"}))


# id, host, instance, cluster_members, rule, severity, field, text
CASES = [
    ("members-not-a-list", "head-a", with_(BIG, cluster={"members": "head-a", "interface": "ens1f0"}), None,
     "cluster-invalid", "error", "cluster", "is not a list of inventory hostnames"),
    ("one-member", "head-a", with_(BIG, cluster={"members": ["head-a"], "interface": "ens1f0"}), None,
     "cluster-invalid", "error", "cluster", "fewer than two hosts"),
    ("member-twice", "head-a", with_(BIG, cluster={"members": ["head-a", "head-a"], "interface": "ens1f0"}), None,
     "cluster-invalid", "error", "cluster", "lists head-a more than once"),
    ("bad-interface", "head-a", with_(BIG, cluster={"members": ["head-a", "worker-b"], "interface": "en s1"}), None,
     "cluster-invalid", "error", "cluster", "is not an interface name"),
    ("typo-key", "head-a", with_(BIG, cluster={"members": ["head-a", "worker-b"], "iface": "ens1f0"}), None,
     "cluster-invalid", "error", "cluster", "keys volta.serving does not read: ['iface']"),
    ("not-a-member", "other-c", BIG, None,
     "cluster-not-member", "error", "cluster.members", "is not one of its members ['head-a', 'worker-b']"),
    ("member-not-in-inventory", "head-a", BIG, {**members(), "worker-b": {"known": False, "in_play": False}},
     "cluster-member-unknown", "error", "cluster.members", "member worker-b is not a host of the inventory"),
    ("member-not-in-run", "head-a", BIG, {**members(), "worker-b": member(in_play=False)},
     "cluster-member-unknown", "error", "cluster.members", "member worker-b is not in this run"),
    ("member-lacks-instance", "head-a", BIG,
     {**members(), "worker-b": member(instances={}, interfaces={"ens1f0": "10.0.0.2"})},
     "cluster-member-mismatch", "error", "cluster.members", "member worker-b has no instance named big"),
    ("other-model-revision", "head-a", BIG, worker_with(model="/srv/models/qwen2.5-72b-instruct@other"),
     "cluster-member-mismatch", "error", "model",
     "model is '/srv/models/qwen2.5-72b-instruct' on the head head-a but '/srv/models/qwen2.5-72b-instruct@other' "
     "on worker-b"),
    ("other-gpu-count", "head-a", BIG, worker_with(gpus=[0, 1]),
     "cluster-member-mismatch", "error", "gpus", "gpus is [0, 1, 2, 3] on the head head-a but [0, 1] on worker-b"),
    ("other-gpu-model", "head-a", BIG,
     {**members(), "worker-b": member(server={**SERVER, "gpu_model": "Tesla V100-PCIE-32GB"},
                                      interfaces={"ens1f0": "10.0.0.2"})},
     "cluster-gpu-mismatch", "error", "volta_server.gpu_model",
     "'Tesla V100-SXM2-32GB' on head-a but 'Tesla V100-PCIE-32GB' on worker-b"),
    ("other-engine-pin", "head-a", BIG,
     {**members(), "worker-b": member(engine={"vllm": {**PINS["vllm"], "version": "0.19.1"}},
                                      interfaces={"ens1f0": "10.0.0.2"})},
     "cluster-engine-mismatch", "error", "engine", "but {'version': '0.19.1'"),
    ("no-address-on-interface", "head-a", BIG,
     {**members(), "worker-b": member(interfaces={"lo": "127.0.0.1", "eth0": "192.168.1.5", "ens1f0": None})},
     "cluster-interface", "error", "cluster.interface",
     "worker-b has no IPv4 address on ens1f0 (interfaces with one: eth0, lo)"),
    ("facts-not-read", "head-a", BIG, {**members(), "worker-b": member(interfaces=None)},
     "cluster-interface", "error", "cluster.interface", "the network facts of worker-b were not read"),
    ("llamacpp", "head-a", with_(BIG, engine="llamacpp", model="/srv/models/m.gguf", tensor_parallel=None,
                                 pipeline_parallel=None), None,
     "cluster-engine", "error", "engine", "engine llamacpp cannot span hosts over Ray"),
    ("tp-across-hosts", "head-a", with_(BIG, tensor_parallel=8, pipeline_parallel=1), None,
     "cluster-tp-spans-hosts", "warning", "tensor_parallel", "tensor_parallel 8 does not divide the 4 GPU(s)"),
    ("two-clusters", "head-a", BIG,
     {**members(member(clusters=["big", "other"], interfaces={"ens1f0": "10.0.0.1"})), },
     "ray-one-cluster", "error", "cluster", "a member of 2 cluster instances (big, other)"),
    ("port-on-ray", "head-a", with_(BIG, port=6379), None,
     "ray-port-collision", "error", "engine_service_ray_ports", "Ray's port(s) [6379]"),
    ("tp-pp-not-members-gpus", "head-a", with_(BIG, tensor_parallel=4, pipeline_parallel=1), None,
     "parallel-size-mismatch", "error", "tensor_parallel",
     "= 4, but the cluster has 8 GPU(s) (4 per member [0, 1, 2, 3] x 2 members)"),
]


def test_every_cluster_rule_has_a_case():
    assert set(CLUSTER_RULES) - {case[4] for case in CASES} == set()


@pytest.mark.parametrize(("host", "instance", "cluster_members", "rule", "severity", "field", "text"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_rule_fires_naming_host_instance_field(host, instance, cluster_members, rule, severity, field, text):
    report = run(host, instance, cluster_members)
    hits = [f for f in report["findings"] if f["rule"] == rule]
    assert hits, f"{rule} not reported; findings: {[f['message'] for f in report['findings']]}"
    hit = hits[0]
    assert (hit["severity"], hit["field"]) == (severity, field)
    assert hit["message"].startswith(f"{host}: instance big: field {field}: ")
    assert text in hit["message"]
    assert " Why: " in hit["message"] and " Fix: " in hit["message"]


def test_a_consistent_cluster_has_no_cluster_finding():
    for host in ("head-a", "worker-b"):
        report = run(host)
        assert report["errors"] == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
        assert not [f for f in report["findings"] if f["rule"].startswith(("cluster", "ray"))]


def test_head_serves_over_ray_and_workers_serve_nothing():
    head = run("head-a")["plan"]
    (entry,) = head["instances"]
    argv = entry["argv"]
    at = argv.index("--pipeline-parallel-size")
    assert argv[at:at + 4] == ["--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "4"
    env = entry["env"]
    assert env["RAY_ADDRESS"] == "10.0.0.1:6379"
    ranks = (env["NCCL_SOCKET_IFNAME"], env["GLOO_SOCKET_IFNAME"], env["VLLM_HOST_IP"])
    assert ranks == ("ens1f0", "ens1f0", "10.0.0.1")
    assert env["RAY_AUTH_MODE"] == "token"
    assert env["RAY_AUTH_TOKEN_PATH"] == "/etc/volta/secrets/ray-big.token"  # noqa: S105  a path, not a secret
    assert entry["ip_allow"] == ["10.0.0.1", "10.0.0.2"]
    assert head["gateway_ports"] == [8010]
    worker = run("worker-b")["plan"]
    assert worker["instances"] == [] and worker["gateway_ports"] == []
    assert worker["ray"]["role"] == "worker" and head["ray"]["role"] == "head"


def test_ray_nodes_bind_the_cluster_address_and_open_only_the_set_ports():
    head, worker = run("head-a")["plan"]["ray"], run("worker-b")["plan"]["ray"]
    assert (head["address"], worker["address"], worker["head_address"]) == ("10.0.0.1", "10.0.0.2", "10.0.0.1")
    assert head["peers"] == ["10.0.0.2"] and worker["peers"] == ["10.0.0.1"]
    assert worker["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert worker["env"]["VLLM_HOST_IP"] == "10.0.0.2"
    assert worker["tcp_ports"][-2:] == ["20000-20199", "32768-60999"]
    assert "6379" in worker["tcp_ports"]
    assert 20100 in ray_port_numbers(PORTS) and 20200 not in ray_port_numbers(PORTS)


def test_no_cluster_no_ray_entry():
    report = build_report(PlanInputs("h", dict(SERVER), [with_(BIG, cluster=None)], engine_versions=PINS,
                                     generate_keys=True))
    assert report["plan"]["ray"] is None
    assert "--distributed-executor-backend" not in report["plan"]["instances"][0]["argv"]


def test_missing_members_are_named_in_member_order():
    plan = run("head-a")["plan"]["ray"]
    assert missing_members(plan, ["10.0.0.1"]) == [{"host": "worker-b", "address": "10.0.0.2"}]
    assert missing_members(plan, ["10.0.0.2", "10.0.0.1"]) == []


def test_ray_pin_against_the_engine_and_the_token_floor():
    from ansible_collections.volta.serving.plugins.plugin_utils._cluster import ray_pin_problem

    assert ray_pin_problem(["packaging", "torch==2.11.0"], "2.54.0", "vllm 0.21.0") == ""
    # vLLM 0.10-era wheels required ray[cgraph]>=2.48.0 for CUDA.
    assert ray_pin_problem(["ray[cgraph]>=2.48.0"], "2.54.0", "vllm 0.10.0") == ""
    text = ray_pin_problem(["ray[cgraph]>=2.56.0"], "2.54.0", "vllm 9.9")
    assert text.startswith("engine_ray_version 2.54.0 is outside what vllm 9.9 requires (ray[cgraph]>=2.56.0).")
    assert "below 2.52.0" in ray_pin_problem([], "2.48.0", "vllm 0.21.0")
    assert "is not a version" in ray_pin_problem([], "latest", "vllm 0.21.0")


def test_ray_start_command_of_head_and_worker():
    head, worker = run("head-a")["plan"]["ray"], run("worker-b")["plan"]["ray"]
    program = "/opt/volta/engines/vllm/current/venv/bin/ray"
    assert head["argv"][:2] == [program, "start"]
    assert "--head" in head["argv"] and "--include-dashboard=false" in head["argv"]
    assert "--port=6379" in head["argv"]
    assert not [a for a in head["argv"] if a.startswith("--ray-client-server-port")]
    assert "--address=10.0.0.1:6379" in worker["argv"] and "--head" not in worker["argv"]
    assert not [a for a in worker["argv"] if a.startswith(("--port=", "--ray-client-server-port"))]
    for plan, address in ((head, "10.0.0.1"), (worker, "10.0.0.2")):
        assert f"--node-ip-address={address}" in plan["argv"]
        assert "--num-gpus=4" in plan["argv"] and "--block" in plan["argv"]
        assert "--temp-dir=/var/lib/volta/ray/tmp" in plan["argv"]
        assert {"--min-worker-port=20000", "--max-worker-port=20199", "--node-manager-port=6380"} <= set(plan["argv"])
        assert not [a for a in plan["argv"] if "token" in a.lower()]


def test_the_example_inventory_plans_without_errors_on_both_members():
    from pathlib import Path

    import yaml

    top = Path(__file__).resolve().parents[4] / "inventories" / "example-cluster"
    group = yaml.safe_load((top / "group_vars" / "cluster_big" / "main.yml").read_text())
    hosts = yaml.safe_load((top / "hosts.yml").read_text())["all"]["children"]["volta"]["children"]["cluster_big"]
    names = list(hosts["hosts"])
    (inst,) = group["volta_instances"]
    assert inst["cluster"]["members"] == names
    info = {name: member(inst, server=group["volta_server"], interfaces={"ens1f0": f"192.168.20.{i + 1}"})
            for i, name in enumerate(names)}
    for name in names:
        report = build_report(PlanInputs(name, dict(group["volta_server"]), [copy.deepcopy(inst)], engine_versions=PINS,
                              generate_keys=True, cluster_members=info, ray_ports=PORTS))
        assert report["errors"] == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
        assert report["plan"]["ray"]["role"] == ("head" if name == names[0] else "worker")


def test_facts_not_read_on_the_controller_is_not_run_not_an_error():
    # Issue 52: the documented controller-only preflight (volta_preflight_detect=false) reads no network facts;
    # cluster-interface was an error there, so a cluster instance could never pass it. It is "not run" now,
    # like every other rule that reads the host; a run that reads the hosts still refuses missing facts.
    unread = {"head-a": member(interfaces=None), "worker-b": member(interfaces=None)}
    for host in ("head-a", "worker-b"):
        report = run(host, cluster_members=unread, model_facts_from="controller")
        assert not [f for f in report["findings"] if f["rule"] == "cluster-interface"], report["findings"]
        assert report["errors"] == 0, [f["message"] for f in report["findings"] if f["severity"] == "error"]
        assert ("cluster-interface (the address of ens1f0 on every member of big): the network facts of head-a, "
                "worker-b were not read (volta_preflight_detect=false)") in report["skipped"]
        assert report["plan"]["ray"] is None
    report = run("head-a", cluster_members=unread)
    assert [f["rule"] for f in report["findings"] if f["severity"] == "error"] == ["cluster-interface"] * 2
    assert not [line for line in report["skipped"] if "cluster-interface" in line]


def test_the_ray_ports_setting_is_checked_before_any_change():
    from ansible_collections.volta.serving.plugins.plugin_utils._cluster import check_ray_ports

    assert check_ray_ports(dict(PORTS)) is None
    cases = [
        ({**PORTS, "gcs": "6379\n--head"}, 'gcs: "6379\\n--head" is not a port from 1024 to 65535'),
        ({**PORTS, "gcs": 80}, "gcs: 80 is not a port from 1024 to 65535"),
        ({"gcs": 6379}, "it lacks node_manager, object_manager"),
        ({**PORTS, "client": 10001}, "it has keys Ray has no port for: client"),
        ({**PORTS, "worker_min": 30000}, "worker_min 30000 is above worker_max 20199"),
        ({**PORTS, "node_manager": 6379}, "port(s) [6379] are given twice"),
        ("6379", '"6379" is not a mapping of Ray\'s ports'),
    ]
    for value, why in cases:
        refused = check_ray_ports(value)
        assert refused and why in refused[0], (value, refused)
        assert "{var}" in refused[1]
