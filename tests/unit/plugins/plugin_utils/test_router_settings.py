# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet router's settings checks (plugins/plugin_utils/_router_settings.py), issue 52.

Every router_* value reaches router.conf.j2, a file name or a module argument; the injections themselves are
shown against the real nginx in tests/unit/roles/test_router_templates.py. Here: the other mistakes, and that
the roles' defaults pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils._router_settings import CHECKS, check_settings

ROLE = Path(__file__).resolve().parents[4] / "roles" / "router"


def test_every_option_of_the_role_has_a_check_and_the_defaults_pass():
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert set(CHECKS) == set(spec)
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert check_settings("router01", defaults, {"ansible_host": "10.0.0.2"}) == []


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("router_listen_address", "203.0.113.5", "router_listen_address: 203.0.113.5 is a public address and the "
         "router serves plain HTTP (it has no TLS)"),
        ("router_listen_address", "fe80::1%eth0", "router_listen_address: 'fe80::1%eth0' is not an IPv4 or IPv6 "
         "address (nginx cannot listen on an address with a zone id such as %eth0)"),
        ("router_listen_address", "router01.example", "router_listen_address: 'router01.example' is not an IPv4"),
        ("router_source_address", "0.0.0.0/0", "router_source_address: 0.0.0.0/0 is a public network: the router "
         "talks plain HTTP to the hosts' gateways"),
        ("router_source_address", ["10.0.0.2", "198.51.100.7"], "router_source_address: 198.51.100.7/32 is a public "
         "network"),
        ("router_source_address", "10.0.0.2/8", "router_source_address: '10.0.0.2/8' has host bits set, so it is "
         "unclear which network is meant. Fix: write 10.0.0.0/8 for the whole network, or 10.0.0.2/32"),
        ("router_backend_address", "10.0.0.11:8000", "router_backend_address: '10.0.0.11:8000' carries a port; the "
         "router connects to the host's gateway on its service_port and would read this as another address. Fix: "
         "set router_backend_address to '10.0.0.11' (the address alone)."),
        ("router_ports", [{"lab-chat": 9000}], "router_ports: [{'lab-chat': 9000}] is a list, not a mapping of "
         "service names to ports (a list is not read at all"),
        ("router_ports", {"lab-chat": "http"}, "router_ports: the port of lab-chat is 'http', not a TCP port"),
        ("router_proxy_connect_timeout", "5s", "router_proxy_connect_timeout: '5s' is not a whole number of seconds "
         "(the router adds the unit s itself)"),
        ("router_keepalive", -1, "router_keepalive: -1 is not a whole number from 1 to 10000"),
        ("router_drain_timeout", 0, "router_drain_timeout: 0 is not a whole number of seconds from 1 to 86400"),
        ("router_packages", ["nginx; rm -rf /"], "router_packages: ['nginx; rm -rf /'] is not a list of Debian "
         "package names"),
    ],
)
def test_each_mistake_is_refused_with_variable_why_and_fix(variable, value, message):
    (refusal,) = check_settings("router01", {variable: value})
    assert refusal.startswith(f"router01: {message}"), refusal
    assert ". Fix: " in refusal


@pytest.mark.parametrize(("variable", "value"), [("router_proxy_connect_timeout", "5"), ("router_keepalive", "16"),
                                                 ("router_source_address", ["10.0.0.2", "fd00::/64"]),
                                                 ("router_backend_address", "gpu-a.lab"),
                                                 ("router_backend_address", "2001:db8::12"),
                                                 ("router_listen_address", "fd00::2")])
def test_good_values_pass(variable, value):
    assert check_settings("router01", {variable: value}) == []


def test_a_router_on_a_public_inventory_address_must_name_its_private_addresses():
    found = check_settings("router01", {"router_listen_address": ""}, {"ansible_host": "198.51.100.2"})
    assert [line.split(": ")[1] for line in found] == ["router_listen_address", "router_source_address"]
    assert found[0].startswith('router01: router_listen_address: "" listens on every address of router01, whose '
                               "address 198.51.100.2 (ansible_host) is public")
    assert check_settings("router01", {"router_listen_address": "10.0.0.2", "router_source_address": "10.0.0.2"},
                          {"ansible_host": "198.51.100.2"}) == []
