# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _firewall_settings: the firewall role's settings refusals and their messages."""

from __future__ import annotations

import pytest
import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import firewall_settings_problems as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _firewall_settings as fs

GOOD = {
    "firewall_backend": "nftables",
    "firewall_ssh_cidrs": ["192.0.2.0/24"],
    "firewall_api_cidrs": ["10.0.0.0/8", "2001:db8::/32"],
    "firewall_metrics_cidrs": [],
    "firewall_ssh_port": "22",
    "firewall_extra_tcp_ports": [8443],
    "firewall_metrics_tcp_ports": [],
    "firewall_connect_timeout": 20,
    "firewall_rollback_timeout": 120,
}


def problems(**changes):
    return fs.settings_problems({**GOOD, **changes}, "gpu1")


def role_problems(**changes):
    """The role's own checks alone (what settings_problems says when the registry finds nothing)."""
    settings = {**GOOD, **changes}
    return [p for p in (check("gpu1", settings) for check in fs.CHECKS) if p]


def test_good_settings_pass():
    assert problems() == []


def test_unknown_backend_names_the_value_and_the_fix():
    assert problems(firewall_backend="iptables") == [
        "gpu1: firewall_backend: \"iptables\" is not one of nftables, ufw. Fix: set firewall_backend to one of "
        "nftables, ufw."]
    assert role_problems(firewall_backend="iptables") == [
        "gpu1: firewall_backend iptables is not supported. Why: the role writes rules for nftables or ufw only. "
        "Fix: set firewall_backend to nftables (the default) or ufw. Nothing was changed."]


@pytest.mark.parametrize("empty", [[], None])
def test_no_ssh_network_is_refused_with_the_port(empty):
    (msg,) = role_problems(firewall_ssh_cidrs=empty, firewall_ssh_port=2222)
    assert msg.startswith("gpu1: firewall_ssh_cidrs is empty. Why: ")
    assert "reach SSH (port 2222)" in msg
    assert "host_vars/gpu1.yml" in msg
    assert msg.endswith('write it out: ["0.0.0.0/0", "::/0"]. Nothing was changed.')


def test_every_invalid_network_is_listed_with_its_variable():
    (msg,) = role_problems(firewall_ssh_cidrs=["10.0.0.5/8"], firewall_metrics_cidrs=["nonsense"])
    assert msg.startswith("gpu1: invalid networks: firewall_ssh_cidrs '10.0.0.5/8': ")
    assert " firewall_metrics_cidrs 'nonsense': " in msg
    assert msg.endswith(" Why: a rule for a network that is not the one meant opens or closes the wrong hosts. "
                        "Nothing was changed.")


@pytest.mark.parametrize("port", [0, 65536, "ssh", True, 22.0, "-1", None])
def test_a_port_that_is_no_tcp_port_is_refused(port):
    (msg,) = role_problems(firewall_extra_tcp_ports=[8443, port])
    assert msg.startswith(f"gpu1: firewall_extra_tcp_ports: {port} is not a TCP port. Why: ")
    (msg,) = problems(firewall_extra_tcp_ports=[8443, port])
    assert msg.startswith("gpu1: firewall_extra_tcp_ports: ")
    assert "Fix: " in msg


def test_every_bad_port_is_listed_in_variable_order():
    (msg,) = role_problems(firewall_ssh_port="0", firewall_metrics_tcp_ports=[70000])
    assert msg.startswith("gpu1: firewall_ssh_port: 0 is not a TCP port; "
                          "firewall_metrics_tcp_ports: 70000 is not a TCP port. Why: ")


@pytest.mark.parametrize(("connect", "rollback", "refused"), [
    (20, 50, False), (20, 49, True), (0, 120, True), ("20", "50", False), ("x", 120, True),
])
def test_the_rollback_waits_for_the_connection_check(connect, rollback, refused):
    found = role_problems(firewall_connect_timeout=connect, firewall_rollback_timeout=rollback)
    assert bool(found) is refused
    if refused:
        assert found[0].startswith(f"gpu1: firewall_rollback_timeout ({rollback}) must be at least "
                                   f"firewall_connect_timeout ({connect}) + 30 seconds")


def test_checks_run_in_the_role_order():
    found = role_problems(firewall_backend="pf", firewall_ssh_cidrs=[], firewall_rollback_timeout=1)
    assert [m.split(": ", 1)[1].split(" ", 1)[0] for m in found] == [
        "firewall_backend", "firewall_ssh_cidrs", "firewall_rollback_timeout"]


def test_filter_through_jinja():
    assert plugin.FilterModule().filters() == {"firewall_settings_problems": plugin.firewall_settings_problems}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "firewall_settings_problems"
    templar = Templar(loader=None, variables={"s": {**GOOD, "firewall_ssh_cidrs": []}})
    templar.environment.filters["firewall_settings_problems"] = plugin.firewall_settings_problems
    found = templar.template(trust_as_template("{{ s | firewall_settings_problems(host='a') }}"))
    assert found == [fs.ssh_problem("a", {**GOOD, "firewall_ssh_cidrs": []})]
    assert found[0].startswith("a: firewall_ssh_cidrs is empty")


def test_the_role_passes_every_setting_the_checks_read():
    from pathlib import Path

    role = Path(__file__).parents[4] / "roles/firewall"
    task = yaml.safe_load((role / "tasks/preflight.yml").read_text())[0]
    expression = task["vars"]["__firewall_settings_problems"]
    assert "__firewall_settings | volta.serving.firewall_settings_problems(" in expression
    settings = yaml.safe_load((role / "vars/main.yml").read_text())["__firewall_settings"]
    assert set(GOOD) <= set(settings), set(GOOD) - set(settings)
    assert all(value == "{{ " + name + " }}" for name, value in settings.items())


# --- the registry's checks first, worded as the settings play words them ------------------------------------
@pytest.mark.parametrize(("port", "why"), [
    ("ssh", '"ssh" is not a whole number'), (0, "0 is not a TCP port (1-65535)"),
    (70000, "70000 is not a TCP port (1-65535)"), ("22/tcp", '"22/tcp" is not a whole number'),
    (True, "true is not a whole number"), (22.0, "22.0 is not a whole number"),
])
def test_the_ssh_port_is_refused_as_the_settings_play_refuses_it(port, why):
    assert problems(firewall_ssh_port=port) == [
        f"gpu1: firewall_ssh_port: {why}: the firewall's first rule lets SSH in on this port, so no rule would "
        "match sshd. Fix: set firewall_ssh_port to the port sshd listens on, a whole number from 1 to 65535, e.g. 22."]


def test_the_role_and_the_settings_play_give_the_same_message():
    from ansible_collections.volta.serving.plugins.plugin_utils._settings import check_host

    for changes in ({"firewall_ssh_port": "ssh"}, {"firewall_api_cidrs": ["10.0.0.5/8"]},
                    {"firewall_forward_policy": "reject"}, {"firewall_exporter_tcp_ports": [9100, "x"]}):
        settings = {**GOOD, **changes}
        assert problems(**changes) == check_host("gpu1", settings), changes


def test_a_network_with_host_bits_names_the_network_it_would_be_widened_to():
    (msg,) = problems(firewall_metrics_cidrs=["10.0.0.2/8"])
    assert msg.startswith('gpu1: firewall_metrics_cidrs: entry 1 of the list: "10.0.0.2/8" has host bits set: it '
                          "would be widened to 10.0.0.0/8 (16777216 addresses)")


@pytest.mark.parametrize(("value", "refused"), [(None, False), ([], False), ([9100, 9402], False), (9100, True),
                                                (["9100; accept"], True), ([0], True)])
def test_exporter_ports_are_null_or_a_list_of_ports(value, refused):
    assert (fs.check_exporter_tcp_ports(value) is not None) is refused
