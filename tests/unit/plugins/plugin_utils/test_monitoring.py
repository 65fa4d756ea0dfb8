# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_monitoring.py: the scrape targets computed from inventory variables."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils import _monitoring as m

ROOT = Path(__file__).resolve().parents[4]
KEY = "k" * 40
EVERY_ADDRESS = "0.0.0.0"  # noqa: S104 - an inventory value under test; nothing binds


class VaultLoader(yaml.SafeLoader):
    """Reads an inventory's !vault values as a placeholder (the key's value does not matter here)."""


VaultLoader.add_constructor("!vault", lambda loader, node: "vaulted-key")


def host(**extra):
    """A serving host that can be scraped from another host: exporters and gateway on every address."""
    base = {
        "ansible_host": "192.0.2.10",
        "exporters_listen_address": EVERY_ADDRESS,
        "api_gateway_metrics_allow": ["192.0.2.50"],
        "firewall_metrics_cidrs": ["192.0.2.50/32"],
        "api_gateway_keys": {"chat": "i" * 40},
        "api_gateway_metrics_key": KEY,
        "volta_instances": [{"name": "chat", "engine": "vllm", "port": 8001, "gpus": [0]}],
    }
    base.update(extra)
    return base


def messages(result):
    return [p["message"] for p in result["problems"]]


def test_a_scrapable_host_gives_three_targets():
    result = m.scrape_targets(["gpu01"], {"gpu01": host()})
    assert result["problems"] == []
    assert result["exporters"] == [
        {"job": "volta-node", "host": "gpu01", "target": "192.0.2.10:9100"},
        {"job": "volta-gpu", "host": "gpu01", "target": "192.0.2.10:9402"},
    ]
    assert result["engines"] == [{"job": "volta-engine", "host": "gpu01", "instance_name": "chat",
                                  "scheme": "http", "target": "192.0.2.10:8001", "key": KEY}]


def test_the_exporters_default_loopback_is_an_error_naming_host_variable_and_fix():
    hv = host()
    del hv["exporters_listen_address"]
    result = m.scrape_targets(["gpu01"], {"gpu01": hv})
    assert result["exporters"] == []
    (problem,) = result["problems"]
    assert problem["host"] == "gpu01" and problem["variable"] == "exporters_listen_address"
    assert problem["message"].startswith("gpu01: exporters_listen_address: the exporters listen on 127.0.0.1 "
                                         "(loopback, the default)")
    assert "Fix: set exporters_listen_address in host_vars/gpu01.yml" in problem["message"]
    assert "192.0.2.10" in problem["message"] and "9402" in problem["message"]


@pytest.mark.parametrize(
    ("extra", "exporter", "engine"),
    [
        ({"exporters_listen_address": "10.1.0.5", "exporters_port": 9500}, "10.1.0.5:9500", "192.0.2.10:8001"),
        ({"exporters_listen_address": "", "prometheus_scrape_address": "gpu01.mgmt"}, "gpu01.mgmt:9402",
         "gpu01.mgmt:8001"),
        ({"api_gateway_listen_address": "10.2.0.5"}, "192.0.2.10:9402", "10.2.0.5:8001"),
        ({"exporters_listen_address": "2001:db8::5", "ansible_host": None}, "[2001:db8::5]:9402", "gpu01:8001"),
    ],
)
def test_addresses(extra, exporter, engine):
    result = m.scrape_targets(["gpu01"], {"gpu01": host(**extra)})
    assert result["problems"] == []
    assert result["exporters"][1]["target"] == exporter
    assert result["engines"][0]["target"] == engine


@pytest.mark.parametrize(
    ("extra", "variable", "text"),
    [
        ({"api_gateway_listen_address": "127.0.0.1"}, "api_gateway_listen_address", "listens on 127.0.0.1 only"),
        ({"api_gateway_metrics_allow": []}, "api_gateway_metrics_allow", "answers /metrics with 403"),
        # Hole 4: Prometheus scraped with the instance's inference key; now the host's metrics-only key or nothing.
        ({"api_gateway_metrics_key": ""}, "api_gateway_metrics_key",
         "is not set: Prometheus scrapes the gateway of gpu01 with its metrics-only key, never with an inference key"),
    ],
)
def test_gateway_problems(extra, variable, text):
    result = m.scrape_targets(["gpu01"], {"gpu01": host(**extra)})
    assert result["engines"] == []
    (problem,) = result["problems"]
    assert problem["variable"] == variable
    assert text in problem["message"] and "Fix:" in problem["message"]


def test_keys_tls_disabled_instances_replicas_and_cluster_workers():
    instances = [
        {"name": "chat", "port": 8001},
        {"name": "off", "port": 8002, "enabled": False},
        {"name": "r1", "port": 8003, "served_model_name": "qwen", "service_port": 8100},
        {"name": "big", "port": 8004, "cluster": {"members": ["gpu02", "gpu01"], "interface": "eth1"}},
        {"name": "head", "port": 8005, "cluster": {"members": ["gpu01", "gpu02"], "interface": "eth1"}},
    ]
    hv = host(volta_instances=instances, api_gateway_keys={"qwen": "q" * 40}, api_gateway_host_key="h" * 40,
              api_gateway_tls_certificate="-----BEGIN CERTIFICATE-----")
    engines = m.scrape_targets(["gpu01"], {"gpu01": hv})["engines"]
    # Every engine is scraped with the metrics-only key, never an instance's or the host's inference key.
    assert [(e["instance_name"], e["key"], e["scheme"]) for e in engines] == [
        ("chat", KEY, "https"), ("r1", KEY, "https"), ("head", KEY, "https")]


@pytest.mark.parametrize(
    ("extra", "jobs", "problems"),
    [
        ({"exporters_node_exporter_port": 9101}, ["volta-node:9101", "volta-gpu:9402"], []),
        ({"exporters_node_exporter_enabled": False}, ["volta-gpu:9402"], []),
        ({"firewall_metrics_cidrs": []}, ["volta-node:9100", "volta-gpu:9402"], ["firewall_metrics_cidrs"]),
        ({"firewall_metrics_cidrs": [], "firewall_enabled": False}, ["volta-node:9100", "volta-gpu:9402"], []),
    ],
)
def test_node_exporter_port_and_firewall(extra, jobs, problems):
    result = m.scrape_targets(["gpu01"], {"gpu01": host(**extra)})
    assert [f"{t['job']}:{t['target'].rsplit(':', 1)[1]}" for t in result["exporters"]] == jobs
    assert [p["variable"] for p in result["problems"]] == problems
    if problems:
        assert "drops the scrapes of ports 9402, 9100" in result["problems"][0]["message"]


def test_a_host_without_instances_has_exporters_only_and_needs_no_gateway_settings():
    hv = host(volta_instances=[], api_gateway_metrics_allow=[])
    result = m.scrape_targets(["gpu01"], {"gpu01": hv})
    assert result["problems"] == [] and result["engines"] == [] and len(result["exporters"]) == 2


def test_the_example_inventory_says_what_to_change():
    # inventories/example as shipped: the exporters on loopback (their default), no metrics network.
    base = ROOT / "inventories/example"
    hv = {}
    for path in ("group_vars/volta/main.yml", "group_vars/volta/vault.yml", "host_vars/gpu01.yml"):
        hv.update(yaml.load((base / path).read_text(encoding="utf-8"), Loader=VaultLoader) or {})  # noqa: S506
    hv["ansible_host"] = yaml.safe_load((base / "hosts.yml").read_text(encoding="utf-8"))[
        "all"]["children"]["volta"]["hosts"]["gpu01"]["ansible_host"]
    result = m.scrape_targets(["gpu01"], {"gpu01": hv})
    variables = sorted(p["variable"] for p in result["problems"])
    assert variables == ["api_gateway_metrics_allow", "exporters_listen_address"]
    hv.update(exporters_listen_address=EVERY_ADDRESS, api_gateway_metrics_allow=["192.0.2.50/32"],
              api_gateway_metrics_key=KEY)
    result = m.scrape_targets(["gpu01"], {"gpu01": hv})
    assert [p["variable"] for p in result["problems"]] == ["firewall_metrics_cidrs"]
    hv.update(firewall_metrics_cidrs=["192.0.2.50/32"])
    result = m.scrape_targets(["gpu01"], {"gpu01": hv})
    assert result["problems"] == []
    assert [e["target"] for e in result["exporters"] + result["engines"]] == [
        "192.0.2.10:9100", "192.0.2.10:9402", "192.0.2.10:8001"]


def test_scrape_configs_one_per_engine_with_its_key_file_and_job_volta_engine():
    targets = m.scrape_targets(["gpu01"], {"gpu01": host(api_gateway_tls_certificate="PEM")})
    configs = m.scrape_configs(targets, "/etc/prometheus/volta/keys", ca_file="/etc/prometheus/volta/gateway-ca.pem")
    assert [c["job_name"] for c in configs] == ["prometheus", "volta-node", "volta-gpu", "volta-engine-gpu01-chat"]
    assert configs[2]["static_configs"] == [{"targets": ["192.0.2.10:9402"], "labels": {"host": "gpu01"}}]
    engine = configs[3]
    assert engine["authorization"] == {"type": "Bearer",
                                       "credentials_file": "/etc/prometheus/volta/keys/gpu01-chat.key"}
    assert engine["relabel_configs"] == [{"target_label": "job", "replacement": "volta-engine"}]
    assert engine["static_configs"][0]["labels"] == {"host": "gpu01", "instance_name": "chat"}
    assert engine["scheme"] == "https" and engine["tls_config"] == {"ca_file": "/etc/prometheus/volta/gateway-ca.pem"}
    assert KEY not in repr(configs)  # the key goes to its file, never into prometheus.yml


# --- the settings registry's checkers (settings_checks/exporters.yml and prometheus.yml) ---------------------
INJECTIONS = ["30d --web.enable-admin-api", "--web.enable-lifecycle", "30d\n", "30d;", "30d{", "30d}", "30d#",
              '30d"', "30d'", ["30d"], None, 30]


@pytest.mark.parametrize("value", ["30d", "90d", "1y", "12w", "36h", "1d12h", "90m"])
def test_retention_time_takes_a_prometheus_duration(value):
    assert m.check_retention_time(value) is None


@pytest.mark.parametrize("value", [*INJECTIONS, "", "0", "30", "30 d", "30D", "d30"])
def test_retention_time_refuses_what_is_no_duration(value):
    why, fix = m.check_retention_time(value)
    assert "is not a Prometheus duration" in why
    assert fix.startswith("set {var} to a duration such as 30d")


def test_retention_time_names_a_flag_that_would_reach_the_command_line():
    why, _fix = m.check_retention_time("30d --web.enable-admin-api")
    assert why == ('"30d --web.enable-admin-api" is not a Prometheus duration: it contains \' \', so the daemon '
                   "would read the rest of it as flags of its own command line")


@pytest.mark.parametrize(("value", "refused"), [("", False), ("50GB", False), ("512MB", False), ("50 GB", True),
                                                ("5GiB", True), ("50GB --x", True), (50, True)])
def test_retention_size(value, refused):
    assert (m.check_retention_size(value) is not None) is refused


@pytest.mark.parametrize(("value", "refused"), [("", False), (8, False), ("8", False), ("0", False), ("x", True),
                                                (True, True), ("100", True), ("8\nDeviceAllow=/dev/sda rw", True)])
def test_expected_gpus(value, refused):
    assert (m.check_expected_gpus(value) is not None) is refused


@pytest.mark.parametrize(("value", "refused"), [
    ("/var/log/nginx/volta-*.access.log", False), ("", False), ("/srv/logs/gw/*.log", False),
    ("/var/log/*.log", True), ("/var/log/auth.log", True), ("/var/log/ngi*/x.log", True), ("/var/log/nginx/", True),
    ("var/log/nginx/*.log", True), ("/var/log/nginx/../auth.log", True), ("/var/log/nginx/*.log --x", True),
])
def test_gateway_logs_are_one_directory_of_their_own(value, refused):
    assert (m.check_gateway_logs(value) is not None) is refused


def test_gateway_logs_in_the_log_root_say_why():
    why, fix = m.check_gateway_logs("/var/log/*.log")
    assert "auth.log included" in why
    assert "/var/log/nginx/volta-*.access.log" in fix


@pytest.mark.parametrize(("value", "refused"), [("volta-exporter", False), ("root", True), ("www-data", True),
                                                ("systemd-network", True), ("Volta", True), ("a b", True)])
def test_exporters_user_is_an_account_of_its_own(value, refused):
    assert (m.check_exporters_user(value) is not None) is refused


@pytest.mark.parametrize(("value", "refused"), [("/opt/volta-exporter", False), ("/", True), ("/usr/local", True),
                                                ("/opt", True), ("opt/x", True), ("/opt/a b", True)])
def test_exporters_root_is_a_directory_of_its_own(value, refused):
    assert (m.check_exporters_root(value) is not None) is refused
