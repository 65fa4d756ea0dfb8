"""Verify the whole chain (playbooks/site.yml) on the simulated V100 host.

Expected values come from the scenario (molecule.yml: the instance, its port and its test key)
and the lab's repositories (tests/lab/apt/build), not from the roles.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
HOST_VARS = SCENARIO["provisioner"]["inventory"]["host_vars"]["site-v100"]
INSTANCE = HOST_VARS["volta_instances"][0]
KEY = HOST_VARS["api_gateway_keys"][INSTANCE["name"]]
PORT = INSTANCE["port"]
DRIVER = "nvidia-driver-580-server"
testinfra_hosts = ["ansible://site-v100"]

# Runs on the host: GET /v1/models through the gateway, the key (if any) read from stdin, so that it
# is never on a command line. Prints the HTTP status.
REQUEST = (
    "python3 -c 'import sys, urllib.request, urllib.error\n"
    "key = sys.stdin.read().strip()\n"
    'req = urllib.request.Request("http://127.0.0.1:%d/v1/models")\n'
    'key and req.add_header("Authorization", "Bearer " + key)\n'
    "try:\n"
    "    r = urllib.request.urlopen(req, timeout=10); print(r.status, r.read().decode())\n"
    "except urllib.error.HTTPError as e:\n"
    "    print(e.code)'"
)


def gateway(host, key):
    return host.run(f"printf '%s' '{key}' | " + REQUEST % PORT)


def test_driver_installed_and_held(host):
    assert host.package(DRIVER).is_installed
    assert host.package(DRIVER).version.startswith("580.")
    assert DRIVER in host.check_output("apt-mark showhold").split()


def test_nvcc_is_12_8(host):
    assert "release 12.8, V12.8.93" in host.check_output("/usr/local/cuda/bin/nvcc --version")


def test_engine_current_link(host):
    link = host.file("/opt/volta/engines/vllm/current")
    assert link.is_symlink
    assert link.linked_to == "/opt/volta/engines/vllm/vllm-0.21.0-torch2.11.0-cu126"
    assert host.file(link.linked_to + "/venv/bin/vllm").exists


def test_unit_active(host):
    unit = host.service(f"volta-{INSTANCE['name']}")
    assert unit.is_running
    assert unit.is_enabled


def test_gateway_refuses_without_key(host):
    assert gateway(host, "").stdout.strip() == "401"


def test_gateway_serves_with_key(host):
    status, body = gateway(host, KEY).stdout.strip().split(" ", 1)
    assert status == "200"
    assert [m["id"] for m in json.loads(body)["data"]] == [INSTANCE["served_model_name"]]


def test_nftables_policy_drop(host):
    chain = host.check_output("nft list chain inet volta_firewall input")
    hook = next(line for line in chain.splitlines() if "hook input" in line)
    assert "policy drop;" in hook
