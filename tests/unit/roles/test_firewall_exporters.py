# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exporters' ports in the firewall's rulesets: from firewall_metrics_cidrs only, and only while the
exporters (volta.serving.exporters, the serving plan's shared.exporters) listen on an address other than
loopback; firewall_exporter_tcp_ports replaces them.

roles/firewall's templates rendered with Ansible's templating, its defaults and vars/main.yml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter.firewall_plan import firewall_ports
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs

ROLE = Path(__file__).resolve().parents[3] / "roles" / "firewall"


def trusted(values):
    """The role's own variables are templates, as Ansible reads them from the role (nested ones too)."""
    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        return {k: trust(v) for k, v in value.items()} if isinstance(value, dict) else value

    return {k: trust(v) for k, v in values.items()}


def render(name, exporters, **extra):
    """*exporters*: the plan's shared.exporters (None: a plan without it)."""
    shared = {} if exporters is None else {"exporters": exporters}
    variables = {
        **trusted(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())),
        **trusted({k: v for k, v in yaml.safe_load((ROLE / "vars" / "main.yml").read_text()).items()
                   if k != "__firewall_ruleset"}),
        "ansible_managed": "managed",
        "inventory_hostname": "gpu-a",
        "groups": {"all": ["gpu-a"], "volta": ["gpu-a"]},
        "firewall_ssh_cidrs": ["192.0.2.0/24"],
        "firewall_ssh_port": 22,
        "firewall_router_cidrs": [],
        "__firewall_serving_plan": {"plan": {"gateway_ports": [8000], "instances": [{"backend_port": 18000}],
                                             "shared": shared}},
        "__firewall_ssh_nets": split_cidrs(["192.0.2.0/24"]),
        "__firewall_api_nets": split_cidrs([]),
        "__firewall_metrics_nets": split_cidrs(["10.0.9.0/24"]),
        "__firewall_router_nets": split_cidrs([]),
        "__firewall_state": {"live_present": False},
        **extra,
    }
    text = (ROLE / "templates" / name).read_text()
    templar = Templar(loader=DataLoader(), variables=variables)
    templar.environment.filters["volta.serving.firewall_ports"] = firewall_ports
    return templar.template(trust_as_template(text))


SHARED = {"listen_address": "127.0.0.1", "port": 9402, "node_exporter_port": 9100, "node_exporter_enabled": True}


@pytest.mark.parametrize("exporters", [
    {**SHARED, "listen_address": "10.0.0.11"},
    {**SHARED, "listen_address": "0.0.0.0"},  # noqa: S104  the setting under test
])
def test_exporter_ports_open_to_the_metrics_networks_when_not_on_loopback(exporters):
    conf = render("nftables.conf.j2", exporters)
    assert ('tcp dport { 9100, 9402 } ip saddr @metrics_v4 accept comment "volta: firewall_metrics_tcp_ports"'
            in conf), conf
    script = render("ufw-rules.sh.j2", exporters)
    assert "ufw allow proto tcp from 10.0.9.0/24 to any port 9402 comment 'volta: firewall_metrics_tcp_ports'" in script


@pytest.mark.parametrize("exporters", [None, SHARED, {**SHARED, "listen_address": "::1"},
                                       {**SHARED, "listen_address": "localhost"}])
def test_no_exporter_port_while_they_listen_on_loopback(exporters):
    conf = render("nftables.conf.j2", exporters)
    assert "9402" not in conf and "9100" not in conf


def test_the_inventory_list_replaces_the_plans_ports():
    conf = render("nftables.conf.j2", {**SHARED, "listen_address": "10.0.0.11"}, firewall_exporter_tcp_ports=[9402])
    assert 'tcp dport { 9402 } ip saddr @metrics_v4 accept' in conf and "9100" not in conf
    assert "9100" not in render("nftables.conf.j2", {**SHARED, "listen_address": "10.0.0.11"},
                                firewall_exporter_tcp_ports=[])
