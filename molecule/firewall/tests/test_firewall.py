"""Verify volta.serving.firewall (nftables) with real TCP between the scenario's containers.

Expected values come from the scenario: the listeners of prepare.yml (gateway 8001, engine
18001 bound to every interface on purpose, 9999 named by no rule), the instance in
molecule.yml (port 8001 -> backend 18001) and converge.yml (client A allowed, client B not).
"""

from __future__ import annotations

import os

import pytest
import testinfra

GATEWAY, ENGINE, OTHER = 8001, 18001, 9999
INVENTORY = os.environ.get("MOLECULE_INVENTORY_FILE", "")
testinfra_hosts = ["ansible://firewall-host"]

# Runs on a client: "open <http status>", "refused" or "timeout".
PROBE = r"""
import socket, sys, urllib.request, urllib.error
host, port = sys.argv[1], int(sys.argv[2])
try:
    socket.create_connection((host, port), timeout=3).close()
except ConnectionRefusedError:
    print("refused"); sys.exit()
except OSError:
    print("timeout"); sys.exit()
try:
    print("open", urllib.request.urlopen(f"http://{host}:{port}/", timeout=5).status)
except urllib.error.HTTPError as exc:
    print("open", exc.code)
"""


def other(name):
    return testinfra.get_host(f"ansible://{name}?ansible_inventory={INVENTORY}")


@pytest.fixture(scope="module")
def address(host):
    return host.interface("eth0").addresses[0]


def probe(client, address, port):
    return client.check_output(f"python3 -c '{PROBE}' {address} {port}").strip()


def test_gateway_reachable_from_allowed_client(address):
    assert probe(other("firewall-client-a"), address, GATEWAY) == "open 200"


def test_gateway_dropped_for_other_client(address):
    assert probe(other("firewall-client-b"), address, GATEWAY) == "timeout"


@pytest.mark.parametrize("client", ["firewall-client-a", "firewall-client-b"])
@pytest.mark.parametrize("port", [ENGINE, OTHER])
def test_engine_and_unlisted_ports_dropped(address, client, port):
    assert probe(other(client), address, port) == "timeout"


def test_engine_still_answers_on_loopback(host):
    assert probe(host, "127.0.0.1", ENGINE) == "open 200"


def test_ruleset_default_drop_and_ssh_first(host):
    chain = host.check_output("nft list chain inet volta_firewall input")
    lines = [line.strip() for line in chain.splitlines()]
    hook = next(line for line in lines if "hook input" in line)
    assert "policy drop;" in hook
    rules = [line for line in lines if line and not line.startswith(("table", "chain", "type", "}"))]
    client_a = other("firewall-client-a").interface("eth0").addresses[0]
    assert rules[0].startswith("tcp dport 22 ip saddr @ssh_v4 accept")
    sets = host.check_output("nft list set inet volta_firewall ssh_v4")
    assert f"elements = {{ {client_a} }}" in sets
    assert f"tcp dport {ENGINE} drop" in chain
    assert f"tcp dport {GATEWAY} ip saddr @api_v4 accept" in chain


def test_only_the_role_table_changed(host):
    # Docker's DNS NAT table survives: the role never flushes the whole ruleset.
    assert "table ip nat" in host.check_output("nft list tables")


def test_nftables_service_enabled_and_file_valid(host):
    service = host.service("nftables")
    assert service.is_enabled
    assert service.is_running
    conf = host.file("/etc/nftables.conf")
    assert conf.contains("Ansible managed")
    assert host.run("nft -c -f /etc/nftables.conf").rc == 0


def test_no_rollback_left_armed_and_no_backup(host):
    assert host.run("systemctl is-active volta-firewall-rollback.timer").stdout.strip() != "active"
    assert host.check_output("ls /etc").count("nftables.conf.") == 0


def test_forward_chain_drops_all_but_replies(host):
    chain = host.check_output("nft list chain inet volta_firewall forward")
    lines = [line.strip() for line in chain.splitlines()]
    assert any("hook forward" in line and "policy drop;" in line for line in lines), chain
    rules = [line for line in lines if line and not line.startswith(("table", "chain", "type", "}"))]
    assert rules == ['ct state established,related accept comment "volta: replies"'], chain
