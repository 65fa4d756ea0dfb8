# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving rules issue 52 found silent (plugins/plugin_utils/_rules_serving.py), through build_report.

- ``service_port`` on an instance over several hosts passed without a word (rule service-port-cluster).
- An instance port on the exporters' port (node_exporter 9100, volta-exporter 9402) passed, and one of the two
  listeners failed to start after the hosts changed (rule exporter-port-collision).
"""

from __future__ import annotations

import copy

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import literal
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report
from ansible_collections.volta.serving.plugins.plugin_utils._rules_serving import CATALOGUE

SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "ram_gb": 512}
PINS = {"vllm": {"version": "0.21.0", "torch_version": "2.11.0", "torch_cuda": "cu126"}}
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "gpus": [0], "port": 8001}
BIG = {"name": "big", "engine": "vllm", "model": "/srv/models/big", "gpus": [0, 1, 2, 3], "tensor_parallel": 4,
       "pipeline_parallel": 2, "port": 8010, "cluster": {"members": ["head-a", "worker-b"], "interface": "ens1f0"}}
EXPORTERS = {"listen_address": "127.0.0.1", "port": 9402, "node_exporter_port": 9100, "node_exporter_enabled": True}


def member(interface_address):
    return {"known": True, "in_play": True, "instances": {"big": BIG}, "server": dict(SERVER),
            "engine": copy.deepcopy(PINS), "interfaces": {"ens1f0": interface_address}, "clusters": ["big"]}


MEMBERS = {"head-a": member("10.0.0.1"), "worker-b": member("10.0.0.2")}


def run(instances, host="h", **settings):
    settings.setdefault("generate_keys", True)
    return build_report(PlanInputs(host, dict(SERVER), copy.deepcopy(instances), engine_versions=PINS,
                                   ray_ports=literal("engine_service", "engine_service_ray_ports"), **settings))


def errors(report, rule):
    return [f["message"] for f in report["findings"] if f["rule"] == rule and f["severity"] == "error"]


def test_the_rules_are_in_the_catalogue():
    assert {"service-port-cluster", "exporter-port-collision"} <= set(CATALOGUE)


@pytest.mark.parametrize("host", ["head-a", "worker-b"])
def test_service_port_on_an_instance_over_several_hosts_is_refused(host):
    report = run([{**BIG, "service_port": 8000}], host=host, cluster_members=MEMBERS)
    (message,) = errors(report, "service-port-cluster")
    assert message.startswith(f"{host}: instance big: field service_port: big runs over several hosts "
                              "(cluster.members head-a, worker-b), and service_port 8000 is set.")
    assert "Fix: remove service_port from big: its clients use port 8010 on head-a" in message
    assert not errors(run([BIG], host=host, cluster_members=MEMBERS), "service-port-cluster")


@pytest.mark.parametrize(("instance", "exporters", "field", "text"), [
    ({**CHAT, "port": 9100}, {}, "port",
     "port 9100 (the gateway's public port) is also node_exporter's port (exporters_node_exporter_port), "
     "on 127.0.0.1."),
    ({**CHAT, "port": 9100}, {"listen_address": "0.0.0.0"}, "port",  # noqa: S104  an exporters setting
     "port 9100 (the gateway's public port) is also node_exporter's port (exporters_node_exporter_port), "
     "on 0.0.0.0."),
    ({**CHAT, "backend_port": 9402}, {}, "backend_port",
     "backend_port 9402 (the engine's loopback port) is also volta-exporter's port (exporters_port), on 127.0.0.1."),
    ({**CHAT, "service_port": 9402}, {"port": 9402}, "service_port",
     "service_port 9402 (the public port of the service chat) is also volta-exporter's port (exporters_port)"),
    ({**CHAT, "port": 9500}, {"node_exporter_port": 9500, "listen_address": "::"}, "port",
     "port 9500 (the gateway's public port) is also node_exporter's port (exporters_node_exporter_port), on ::."),
])
def test_an_instance_port_on_an_exporters_port_is_refused(instance, exporters, field, text):
    report = run([instance], exporters={**EXPORTERS, **exporters})
    (message,) = errors(report, "exporter-port-collision")
    assert message.startswith(f"h: instance chat: field {field}: {text}")
    assert "Why: two listeners cannot share a port" in message
    assert "Fix: choose another " + field in message and "exporters_" in message


@pytest.mark.parametrize(("instance", "exporters", "gateway"), [
    ({**CHAT, "port": 9100}, {"node_exporter_enabled": False}, None),
    # The exporters and the gateway on two addresses of their own: no collision.
    ({**CHAT, "port": 9100}, {"listen_address": "10.0.0.5"}, {"listen_address": "10.0.0.6"}),
    # The backend port is on loopback only; the exporters on another address.
    ({**CHAT, "backend_port": 9402}, {"listen_address": "10.0.0.5"}, None),
    (CHAT, {}, None),
])
def test_ports_apart_or_addresses_apart_pass(instance, exporters, gateway):
    report = run([instance], exporters={**EXPORTERS, **exporters}, gateway=gateway)
    assert not errors(report, "exporter-port-collision")


def test_a_cluster_worker_does_not_listen_on_the_instance_port():
    report = run([{**BIG, "port": 9100}], host="worker-b", cluster_members=MEMBERS, exporters=EXPORTERS)
    assert not errors(report, "exporter-port-collision")
    report = run([{**BIG, "port": 9100}], host="head-a", cluster_members=MEMBERS, exporters=EXPORTERS)
    assert errors(report, "exporter-port-collision")
