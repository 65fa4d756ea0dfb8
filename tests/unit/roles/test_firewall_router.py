# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet router's addresses in the firewall's rulesets: the service ports only, nothing else.

roles/firewall's templates rendered with Ansible's templating and its vars/main.yml (the router ports from a
serving plan with a service on 8000 and an instance's own port 8001). The molecule scenario `router`
checks the same against nftables between the lab's containers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter.firewall_plan import firewall_ports
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs

ROLE = Path(__file__).resolve().parents[3] / "roles" / "firewall"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def trusted(values):
    """The role's own variables are templates, as Ansible reads them from the role (nested ones too)."""
    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        return {k: trust(v) for k, v in value.items()} if isinstance(value, dict) else value

    return {k: trust(v) for k, v in values.items()}


PLAN = {"plan": {"gateway_ports": [8000, 8001], "instances": [{"backend_port": 18001}],
                 "services": [{"name": "lab-chat", "port": 8000}]}}


def render(name, host="gpu-a", routers=("10.0.0.2", "2001:db8::2")):
    variables = {
        **trusted(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())),
        **trusted({k: v for k, v in VARS.items() if k != "__firewall_ruleset"}),
        "ansible_managed": "managed",
        "inventory_hostname": host,
        "groups": {"all": ["gpu-a", "gpu-b", "router"], "volta": ["gpu-a", "gpu-b"], "volta_router": ["router"]},
        "firewall_ssh_cidrs": ["192.0.2.0/24"],
        "firewall_api_cidrs": ["192.0.2.10"],
        "firewall_ssh_port": 22,
        "__firewall_serving_plan": PLAN,
        # volta.serving.cidr_split's answers (plugins/plugin_utils/_cidr.py), without the collection loader.
        "__firewall_ssh_nets": split_cidrs(["192.0.2.0/24"]),
        "__firewall_api_nets": split_cidrs(["192.0.2.10"]),
        "__firewall_metrics_nets": split_cidrs([]),
        "__firewall_router_nets": split_cidrs(list(routers)),
        "__firewall_state": {"live_present": False},
    }
    text = (ROLE / "templates" / name).read_text()
    templar = Templar(loader=DataLoader(), variables=variables)
    templar.environment.filters["volta.serving.firewall_ports"] = firewall_ports
    return templar.template(trust_as_template(text))


def test_nftables_lets_the_router_in_on_the_service_ports_only():
    conf = render("nftables.conf.j2")
    assert re.search(r"set router_v4 \{.*?elements = \{ 10\.0\.0\.2/32 \}", conf, re.S)
    assert re.search(r"set router_v6 \{.*?elements = \{ 2001:db8::2/128 \}", conf, re.S)
    rules = [line.strip() for line in conf.splitlines() if "@router_" in line]
    assert rules == [
        'tcp dport { 8000 } ip saddr @router_v4 accept comment "volta: service ports (fleet router)"',
        'tcp dport { 8000 } ip6 saddr @router_v6 accept comment "volta: service ports (fleet router)"',
    ]
    # The clients' networks keep every gateway port.
    assert 'tcp dport { 8000, 8001 } ip saddr @api_v4 accept comment "volta: gateway"' in conf


@pytest.mark.parametrize(("host", "routers"), [("gpu-a", ()), ("outside", ("10.0.0.2",))])
def test_nothing_for_the_router_without_router_addresses_or_outside_group_volta(host, routers):
    conf = render("nftables.conf.j2", host=host, routers=routers)
    assert "router_v" not in conf and "fleet router" not in conf


def test_ufw_lets_the_router_in_on_the_service_ports_only():
    script = render("ufw-rules.sh.j2")
    rules = [line for line in script.splitlines() if "fleet router" in line]
    assert rules == [
        "ufw allow proto tcp from 10.0.0.2/32 to any port 8000 comment 'volta: service ports (fleet router)'",
        "ufw allow proto tcp from 2001:db8::2/128 to any port 8000 comment 'volta: service ports (fleet router)'",
    ]
