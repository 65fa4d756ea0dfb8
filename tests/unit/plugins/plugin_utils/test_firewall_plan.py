# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _firewall_plan: the firewall's port lists, its plan check and report, and the load's decisions."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import firewall_plan as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _firewall_plan as fp
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs

SHARED = {"listen_address": "127.0.0.1", "port": 9402, "node_exporter_port": 9100, "node_exporter_enabled": True}


@pytest.mark.parametrize(("exporters", "want"), [
    (None, []),
    ({}, []),
    (SHARED, []),
    ({**SHARED, "listen_address": "127.0.0.53"}, []),
    ({**SHARED, "listen_address": "::1"}, []),
    ({**SHARED, "listen_address": "[::1]"}, []),
    ({**SHARED, "listen_address": "localhost"}, []),
    ({**SHARED, "listen_address": "10.0.0.11"}, [9100, 9402]),
    ({**SHARED, "listen_address": "0.0.0.0"}, [9100, 9402]),  # noqa: S104  the setting under test
    ({**SHARED, "listen_address": "10.0.0.11", "port": "9500", "node_exporter_port": 9200}, [9200, 9500]),
    ({"listen_address": "10.0.0.11"}, [9100, 9402]),
])
def test_exporter_ports(exporters, want):
    assert fp.exporter_ports(exporters) == want


def serving_plan(**plan):
    instances = [{"backend_port": "18001"}, {"backend_port": 18000}]
    return {"plan": {"gateway_ports": [8001, 8000, 8000], "instances": instances, **plan}}


@pytest.mark.parametrize(("given", "kwargs", "want"), [
    # No plan (skipped, none): nothing from it.
    ({"skipped": True}, {}, {"gateway": [], "engine": [], "router": [], "metrics": [], "ray": None}),
    (None, {}, {"gateway": [], "engine": [], "router": [], "metrics": [], "ray": None}),
    # The plan's ports sorted and unique; the services only on a host of group volta.
    (serving_plan(services=[{"port": 8000}, {"port": "8000"}]), {},
     {"gateway": [8000, 8001], "engine": [18000, 18001], "router": [8000], "metrics": [], "ray": None}),
    (serving_plan(services=[{"port": 8000}]), {"host": "outside"},
     {"gateway": [8000, 8001], "engine": [18000, 18001], "router": [], "metrics": [], "ray": None}),
    # The exporters' ports from the plan's shared section, merged with the metrics ports.
    (serving_plan(shared={"exporters": {**SHARED, "listen_address": "10.0.0.11"}}), {"metrics": [9100, "9256"]},
     {"gateway": [8000, 8001], "engine": [18000, 18001], "router": [], "metrics": [9100, 9256, 9402], "ray": None}),
    # firewall_exporter_tcp_ports replaces the plan's, an empty list included.
    (serving_plan(shared={"exporters": {**SHARED, "listen_address": "10.0.0.11"}}), {"exporter": []},
     {"gateway": [8000, 8001], "engine": [18000, 18001], "router": [], "metrics": [], "ray": None}),
    ({"skipped": True}, {"exporter": [9402]},
     {"gateway": [], "engine": [], "router": [], "metrics": [9402], "ray": None}),
    (serving_plan(ray={"instance": "big"}), {},
     {"gateway": [8000, 8001], "engine": [18000, 18001], "router": [], "metrics": [], "ray": {"instance": "big"}}),
])
def test_ports(given, kwargs, want):
    args = {"host": "gpu-a", "extra": ["8443", 8443], "metrics": [], "exporter": None, **kwargs}
    settings = {**args, "volta_hosts": ["gpu-a"], "ssh_port": "22"}
    got = plugin.firewall_ports(given, settings)
    assert got == {**want, "extra": [8443], "ssh": 22}


NETS = {"ssh": split_cidrs(["192.0.2.0/24"]), "api": split_cidrs([]), "router": split_cidrs([])}


def ports(**changes):
    return {"gateway": [8000], "engine": [18001], "extra": [], "router": [], "metrics": [], "ssh": 22, "ray": None,
            **changes}


@pytest.mark.parametrize(("given", "nets", "report"), [
    (ports(), NETS, "gpu-a: default deny inbound (nftables); SSH port 22 from 192.0.2.0/24; gateway ports 8000 and "
     "extra ports none from nowhere; engine ports 18001 from loopback only"),
    (ports(gateway=[], engine=[], extra=[8443]), {**NETS, "api": split_cidrs(["10.0.0.0/8", "2001:db8::/32"])},
     "gpu-a: default deny inbound (nftables); SSH port 22 from 192.0.2.0/24; gateway ports none and extra ports 8443 "
     "from 10.0.0.0/8, 2001:db8::/32; engine ports none from loopback only"),
    # The router's part only with service ports and router addresses both.
    (ports(router=[8000]), {**NETS, "router": split_cidrs(["10.0.0.2"])},
     "gpu-a: default deny inbound (nftables); SSH port 22 from 192.0.2.0/24; gateway ports 8000 and extra ports none "
     "from nowhere; engine ports 18001 from loopback only; service ports 8000 also from the fleet router "
     "(10.0.0.2/32)"),
    (ports(router=[8000]), NETS, "gpu-a: default deny inbound (nftables); SSH port 22 from 192.0.2.0/24; gateway ports "
     "8000 and extra ports none from nowhere; engine ports 18001 from loopback only"),
])
def test_the_report(given, nets, report):
    assert plugin.firewall_port_check(given, "gpu-a", "nftables", "22", nets) == {
        "problems": [], "message": "", "report": report}


def test_an_engine_port_opened_elsewhere_is_refused_alone():
    got = fp.port_check(ports(engine=[18000, 18001], extra=[18001], metrics=[18000]), "gpu-a", "ufw", 22, NETS)
    assert got["problems"] == [got["message"]]
    assert got["message"].startswith("gpu-a: port(s) 18000, 18001 are engine (backend) ports of the serving plan")
    assert got["message"].endswith("change the instance's backend_port. Nothing was changed.")
    assert fp.port_check(ports(engine=[22]), "gpu-a", "ufw", 22, NETS)["message"].startswith("gpu-a: port(s) 22 are")


def test_rays_problems_and_report():
    ray = {"instance": "big", "interface": "ens1f0", "peers": ["10.0.0.1"], "tcp_ports": ["6379", "20000-20199"],
           "members": []}
    good = fp.port_check(ports(ray=ray), "gpu-a", "nftables", 22, NETS)
    assert good["problems"] == []
    assert good["report"].endswith("; Ray ports 6379, 20000-20199 from cluster members 10.0.0.1 on ens1f0")
    bad = fp.port_check(ports(ray=ray, gateway=[6379]), "gpu-a", "nftables", 22, NETS)
    assert bad["message"].startswith("gpu-a: port(s) 6379 are Ray's ports of the cluster of instance big")


@pytest.mark.parametrize(("state", "backend", "conf", "want"), [
    ({"ruleset_changes": [], "live_present": True}, "nftables", None, False),
    ({"ruleset_changes": [{"before": ""}], "live_present": True}, "nftables", None, True),
    ({"ruleset_changes": [], "live_present": False}, "nftables", None, True),
    # nftables never reads the ufw script's result (a skipped task's).
    ({"ruleset_changes": [], "live_present": True}, "nftables", {"changed": True}, False),
    ({"live_present": True}, "ufw", {"changed": False}, False),
    ({"live_present": True}, "ufw", {"changed": True}, True),
    ({"live_present": False}, "ufw", {}, True),
    ({"live_present": True}, "ufw", None, False),
])
def test_needs_load(state, backend, conf, want):
    assert plugin.firewall_needs_load(state, backend, conf) is want


@pytest.mark.parametrize(("backend", "pending", "want"), [
    ("nftables", False, [{"path": "/s/new", "content": "C", "mode": "0600", "validate": "nft -c -f %s"},
                         {"path": "/s/rb.sh", "mode": "0700", "template": "rollback-nftables.sh.j2"}]),
    ("nftables", True, [{"path": "/s/new", "content": "C", "mode": "0600", "validate": "nft -c -f %s"}]),
    ("ufw", False, [{"path": "/s/rb.sh", "mode": "0700", "template": "rollback-ufw.sh.j2"}]),
    ("ufw", True, []),
])
def test_apply_files(backend, pending, want):
    inputs = {"backend": backend, "staged": "/s/new", "content": "C", "rollback_pending": pending,
              "rollback_script": "/s/rb.sh"}
    assert plugin.firewall_apply_files(inputs) == want


FACTS = {"armed": False, "restored": False, "rolled_back": False, "backend": "nftables", "dest": "/etc/ufw/x.sh",
         "ufw_script": "/etc/ufw/x.sh", "nft_conf": "/etc/nftables.conf", "timeout": 120, "unit": "rb"}


@pytest.mark.parametrize(("changes", "want"), [
    ({}, "Nothing was loaded."),
    ({"restored": True, "backend": "ufw"}, "Nothing was loaded; /etc/ufw/x.sh was put back."),
    ({"armed": True, "rolled_back": True}, "The previous rules were restored; /etc/nftables.conf was not changed "
     "(it is written after a confirmed load)."),
    ({"armed": True, "rolled_back": True, "backend": "ufw"}, "The previous rules and /etc/ufw/x.sh were restored."),
    ({"armed": True}, "The controller could not reach the host to restore it: the host restores the previous rules "
     "by itself within 120 s of the load (transient timer rb.timer); /etc/nftables.conf was not changed."),
    ({"armed": True, "backend": "ufw"}, "The controller could not reach the host to restore it: the host restores the "
     "previous rules and /etc/ufw/x.sh by itself within 120 s of the load (transient timer rb.timer)."),
])
def test_rollback_outcome(changes, want):
    assert plugin.firewall_rollback_outcome({**FACTS, **changes}) == want


def test_every_filter_is_registered():
    assert set(plugin.FilterModule().filters()) == {
        "firewall_ports", "firewall_port_check", "firewall_needs_load", "firewall_apply_files",
        "firewall_rollback_outcome"}
