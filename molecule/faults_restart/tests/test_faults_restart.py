"""Verify the host after both faults (side_effect.yml): it serves, and it is what the last run asked for.

Expected values come from the scenario: the instance and the old key (molecule.yml), the new key
(vars/changes.yml), the network the last run added (side_effect.yml's ruleset change) and the stand-in
listener on port 22 (prepare.yml).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import testinfra
import yaml

HERE = Path(__file__).resolve().parents[1]
SCENARIO = yaml.safe_load((HERE / "molecule.yml").read_text())
OLD_KEY = SCENARIO["provisioner"]["inventory"]["host_vars"]["faults-restart-v100"]["api_gateway_keys"]["chat"]
NEW_KEY = yaml.safe_load((HERE / "vars" / "changes.yml").read_text())["api_gateway_keys"]["chat"]
ADDED_NETWORK = "10.98.0.0/24"
HOST = "faults-restart-v100"
testinfra_hosts = [f"ansible://{HOST}"]

# Runs on the client: GET /v1/models through the gateway with the key read from stdin; prints the status.
REQUEST = (
    "python3 -c 'import sys, urllib.request, urllib.error\n"
    'req = urllib.request.Request("http://%s:8001/v1/models")\n'
    'req.add_header("Authorization", "Bearer " + sys.stdin.read().strip())\n'
    "try:\n"
    "    r = urllib.request.urlopen(req, timeout=10); print(r.status, r.read().decode())\n"
    "except urllib.error.HTTPError as e:\n"
    "    print(e.code, \"\")'"
)
SSH_PROBE = (
    "python3 -c 'import socket; s = socket.create_connection((\"%s\", 22), timeout=3); print(s.recv(64).decode())'"
)


@pytest.fixture(scope="module")
def client():
    inventory = os.environ.get("MOLECULE_INVENTORY_FILE", "")
    return testinfra.get_host(f"ansible://faults-restart-client?ansible_inventory={inventory}")


def test_gateway_serves_the_new_key_from_the_client(client):
    status, body = client.check_output(f"printf '%s' '{NEW_KEY}' | " + REQUEST % HOST).split(" ", 1)
    assert status == "200"
    assert [m["id"] for m in json.loads(body)["data"]] == ["lab-chat"]


def test_gateway_refuses_the_old_key(client):
    assert client.check_output(f"printf '%s' '{OLD_KEY}' | " + REQUEST % HOST).strip() == "401"


def test_ssh_port_answers_the_client(client):
    assert client.check_output(SSH_PROBE % HOST).strip() == "SSH-2.0-volta-lab-standin"


def test_units_active(host):
    for unit in ("volta-chat", "nginx", "nftables"):
        assert host.service(unit).is_running, unit
        assert host.service(unit).is_enabled, unit


def test_ruleset_live_and_at_boot_has_the_last_change(host):
    chain = host.check_output("nft list chain inet volta_firewall input")
    assert "policy drop;" in next(line for line in chain.splitlines() if "hook input" in line)
    assert ADDED_NETWORK in host.check_output("nft list set inet volta_firewall api_v4")
    assert ADDED_NETWORK in host.file("/etc/nftables.conf").content_string


def test_no_rollback_armed(host):
    assert host.run("systemctl is-active volta-firewall-rollback.timer").stdout.strip() != "active"
