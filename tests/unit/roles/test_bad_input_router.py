# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on the controller (volta_preflight_detect=false): every fleet-router mistake of issue 52
is refused before any change, each with host, variable, why and fix.

One inventory: hosts of group volta that serve lab-chat (one good, the others each with one mistake that only
the router reads: an unsafe inventory name, a backend address with a port) and router hosts (group
volta_router), each with one mistake of its own; router-good makes none. The run must stop in the router's
preflight, before the settings play and every host layer; each mistake is asserted by its message. No test
here reaches the network: the index is a closed local port.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
KEY = "router-bad-input-key-not-a-secret-0123456789"
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "served_model_name": "lab-chat", "gpus": [0],
        "port": 8001, "service_port": 8000}
COMMON = {"ansible_connection": "local", "firewall_api_cidrs": ["10.0.0.0/8"], "firewall_ssh_cidrs": ["10.0.0.0/8"],
          "engine_pypi_index_url": "http://127.0.0.1:9/simple"}  # fmt: skip
EVIL = "x;server evil.example backup;#"
INJECTION = "127.0.0.1; location /k/ { alias /etc/nginx/volta-router/; } listen 127.0.0.1"


def serving(address, **variables):
    return {**COMMON, "ansible_host": address, "volta_server": SERVER, "volta_instances": [CHAT],
            "api_gateway_keys": {"lab-chat": KEY}, **variables}


def router(**variables):
    return {"ansible_connection": "local", "ansible_host": "10.0.0.2", **variables}


# Run 1: the serving plays skip "gpu b" and EVIL (their names split as host patterns), so only the router reads
# them: its preflight refuses them.
SERVING = {
    "gpu-good": serving("10.0.0.11"),
    "gpu-good2": serving("10.0.0.12"),
    "gpu b": serving("10.0.0.13"),
    EVIL: serving("10.0.0.14"),
}
# Run 2: the mistakes of hosts of group volta that preflight checks (the settings action with the router's
# registry checks, plugins/plugin_utils/settings_checks/router.yml): refused there, before the router's play.
SERVING_CHECKED = {
    "gpu-good": serving("10.0.0.11"),
    "gpu-port": serving("10.0.0.12", router_backend_address="10.0.0.12:8000"),
    "gpu-name": serving("10.0.0.13", router_backend_address="gpu-b; server evil.example"),
    "../x": serving("10.0.0.15"),
}
EXPECTED_CHECKED = {
    "gpu-port": ["gpu-port: router_backend_address: '10.0.0.12:8000' carries a port; the router connects to the "
                 "host's gateway on its service_port and would read this as another address. Fix: set "
                 "router_backend_address to '10.0.0.12' (the address alone)."],
    "gpu-name": ["gpu-name: router_backend_address: 'gpu-b; server evil.example' is not an IP address or a host name, "
                 "so nginx would read it as configuration"],
    "../x": ["../x: inventory host name: \"../x\" is not a safe host name", "Fix: rename the host in the inventory"],
}
ROUTERS = {
    "router-good": router(router_listen_address="10.0.0.2", router_source_address="10.0.0.2"),
    "router-listen": router(router_listen_address=INJECTION),
    "router-body": router(router_client_max_body_size="64m; location /open/ { proxy_pass http://x; } #"),
    "router-rate": router(router_unauthorized_rate="30r/m; server { listen 8099; } #"),
    "router-burst": router(router_unauthorized_burst="20 nodelay; } location /open/ { return 200; } location @x {"),
    "router-timeout": router(router_proxy_connect_timeout="5s"),
    "router-read": router(router_proxy_read_timeout="3600; location /open/ { return 200; } #"),
    "router-keepalive": router(router_keepalive=-1),
    "router-list": router(router_ports=[{"lab-chat": 9000}]),
    "router-ssh": router(router_ports={"lab-chat": 22}),
    "router-sshport": router(ansible_port=8000),
    "router-bits": router(router_source_address="10.0.0.2/8"),
    "router-open": router(router_source_address="0.0.0.0/0"),
    "router-public": router(router_listen_address="203.0.113.5"),
    "router-everywhere": router(ansible_host="198.51.100.2", router_source_address="10.0.0.2"),
    "router-zone": router(router_listen_address="fe80::1%eth0"),
}

# Each router's own mistake, by its message (HOST: VARIABLE: why. Fix: fix).
EXPECTED = {
    "router-listen": [f"router-listen: router_listen_address: {INJECTION!r} is not an IPv4 or IPv6 address, so nginx "
                      "would read it as configuration", "Fix: set router_listen_address to one private address"],
    "router-body": ["router-body: router_client_max_body_size: '64m; location /open/ { proxy_pass http://x; } #' is "
                    "not an nginx size", "Fix: set router_client_max_body_size to a number"],
    "router-rate": ["router-rate: router_unauthorized_rate: '30r/m; server { listen 8099; } #' is not an nginx "
                    "request rate", "Fix: set router_unauthorized_rate to a whole number of requests"],
    "router-burst": ["router-burst: router_unauthorized_burst: '20 nodelay; } location /open/ { return 200; } "
                     "location @x {' is not a whole number from 0 to 100000"],
    "router-timeout": ["router-timeout: router_proxy_connect_timeout: '5s' is not a whole number of seconds (the "
                       "router adds the unit s itself)", "Fix: write a positive whole number of seconds without a "
                       "unit, for example 5."],
    "router-read": ["router-read: router_proxy_read_timeout: '3600; location /open/ { return 200; } #' is not a "
                    "whole number of seconds"],
    "router-keepalive": ["router-keepalive: router_keepalive: -1 is not a whole number from 1 to 10000"],
    "router-list": ["router-list: router_ports: [{'lab-chat': 9000}] is a list, not a mapping of service names to "
                    "ports", "Fix: write router_ports as a mapping served_model_name -> port"],
    "router-ssh": ["router-ssh: field router_ports[lab-chat]: router port 22 of service lab-chat is the port "
                   "router-ssh's sshd listens on (ansible_port, default 22)."],
    "router-sshport": ["router-sshport: field router_ports[lab-chat]: router port 8000 of service lab-chat is the "
                       "port router-sshport's sshd listens on"],
    "router-bits": ["router-bits: router_source_address: '10.0.0.2/8' has host bits set, so it is unclear which "
                    "network is meant. Fix: write 10.0.0.0/8 for the whole network, or 10.0.0.2/32 for the single "
                    "address."],
    "router-open": ["router-open: router_source_address: 0.0.0.0/0 is a public network: the router talks plain HTTP "
                    "to the hosts' gateways"],
    "router-public": ["router-public: router_listen_address: 203.0.113.5 is a public address and the router serves "
                      "plain HTTP (it has no TLS)"],
    "router-everywhere": ['router-everywhere: router_listen_address: "" listens on every address of '
                          "router-everywhere, whose address 198.51.100.2 (ansible_host) is public"],
    "router-zone": ["router-zone: router_listen_address: 'fe80::1%eth0' is not an IPv4 or IPv6 address (nginx "
                    "cannot listen on an address with a zone id such as %eth0)"],
}
# The names of the hosts of group volta the serving plays skip, named by every router whose own settings pass
# (router-good too).
BACKENDS = [
    "gpu b: field inventory_hostname: the inventory name 'gpu b' holds characters other than letters, digits",
    f"{EVIL}: field inventory_hostname: the inventory name {EVIL!r} holds characters",
    "Fix: rename the host in the inventory (for example gpu-b) and keep its address in ansible_host.",
]


def run_site(tmp_path, inventory):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
           "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}  # fmt: skip
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "site.yml"), "-i", str(inventory),
               "-e", "volta_preflight_detect=false"]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=400, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def failures(out):
    """host -> the message of its failure (fatal: [HOST]: FAILED! => {JSON result}), whitespace flattened."""
    found, decoder = {}, json.JSONDecoder()
    for match in re.finditer(r"^fatal: \[(.+?)\]: FAILED! => ", out, re.M):
        result, _end = decoder.raw_decode(out, match.end())
        found[match.group(1)] = " ".join(str(result.get("msg", "")).split())
    return found


def run(tmp_path_factory, name, serving_hosts):
    tmp_path = tmp_path_factory.mktemp(name)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"volta": {"hosts": serving_hosts},
                                                              "volta_router": {"hosts": ROUTERS}}}}))
    rc, out = run_site(tmp_path, inventory)
    return rc, out, failures(out)


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    return run(tmp_path_factory, "router-mistakes", SERVING)


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    return run(tmp_path_factory, "router-backends", SERVING_CHECKED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_router_mistake_is_named_before_any_change(mistakes, name):
    rc, out, found = mistakes
    assert rc != 0
    assert name in found, (name, out[-6000:])
    for text in EXPECTED[name]:
        assert text in found[name], (name, text, found[name])
    # One mistake, one message about this router.
    assert found[name].count(f"{name}: ") == 1, found[name]


def test_the_backends_mistakes_are_named_and_the_good_router_makes_none(mistakes):
    found = mistakes[2]
    message = found["router-good"]
    for text in BACKENDS:
        assert " ".join(text.split()) in message, (text, message)
    # router-good is refused only for the hosts it would route to, never for a setting of its own.
    assert "router-good:" not in message
    assert KEY not in mistakes[1]


def test_the_run_stops_before_the_settings_play_and_every_host_layer(mistakes):
    out = mistakes[1]
    for play in ("PLAY [Check every layer's settings", "PLAY [Driver and CUDA toolkit]", "PLAY [Engine",
                 "PLAY [Fleet router]"):
        assert play not in out, out[-3000:]
    assert "gpu-good" not in mistakes[2]


@pytest.mark.parametrize("name", sorted(EXPECTED_CHECKED))
def test_a_backend_mistake_is_refused_in_preflight_on_its_host(checked, name):
    rc, out, found = checked
    assert rc != 0
    assert name in found, (name, out[-6000:])
    for text in EXPECTED_CHECKED[name]:
        assert text in found[name], (name, text, found[name])
    assert "gpu-good" not in found
    # Preflight of the serving hosts stops the run: the router's preflight never starts.
    assert "PLAY [Preflight of the fleet router" not in out
