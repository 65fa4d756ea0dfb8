# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_router.py: the fleet router's services from the inventory.

Two hosts serve lab-chat on port 8000 (one replica each), as the molecule scenario `router` does; the
findings are the refusals the router role asserts before any change.
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.module_utils._services import established_to, rotation_files
from ansible_collections.volta.serving.plugins.plugin_utils._router import (
    host_backends,
    listen_ports,
    probe_url,
    router_plan,
    router_sources,
    safe_id,
    serving_hosts,
)

KEY = "router-test-key-0123456789abcdef0123"
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/lab-chat", "served_model_name": "lab-chat",
        "gpus": [0], "port": 8001, "service_port": 8000}


def view(host, address, instances=(CHAT,), **changes):
    return {"host": host, "address": address, "instances": list(instances), "keys": {"lab-chat": KEY},
            "host_key": "", "generate_keys": False, **changes}


HOSTS = [view("gpu-a", "10.0.0.11"), view("gpu-b", "10.0.0.12")]


def test_one_service_with_one_backend_per_host_each_in_its_rotation_file():
    plan = router_plan(HOSTS, "router")
    assert plan["findings"] == []
    (service,) = plan["services"]
    assert (service["name"], service["port"], service["key"]) == ("lab-chat", 8000, KEY)
    assert service["backends"] == [
        {"host": "gpu-a", "id": "gpu-a", "address": "10.0.0.11", "port": 8000,
         "rotation_file": "/etc/nginx/volta-router/rotation/8000-gpu-a.conf"},
        {"host": "gpu-b", "id": "gpu-b", "address": "10.0.0.12", "port": 8000,
         "rotation_file": "/etc/nginx/volta-router/rotation/8000-gpu-b.conf"},
    ]
    assert rotation_files(plan["services"]) == [
        {"path": "/etc/nginx/volta-router/rotation/8000-gpu-a.conf",
         "content": "server 10.0.0.11:8000 max_fails=1 fail_timeout=5s;\n"},
        {"path": "/etc/nginx/volta-router/rotation/8000-gpu-b.conf",
         "content": "server 10.0.0.12:8000 max_fails=1 fail_timeout=5s;\n"},
    ]
    assert [b["host"] for b in host_backends(plan, "gpu-b")] == ["gpu-b"]
    assert host_backends(plan, "gpu-b")[0]["service"] == "lab-chat"


def test_router_ports_moves_the_listener_and_instances_without_service_port_are_not_routed():
    solo = {**CHAT, "name": "solo", "served_model_name": "lab-solo", "service_port": None, "port": 8003}
    off = {**CHAT, "name": "off", "served_model_name": "lab-off", "service_port": 8100, "enabled": False}
    hosts = [view("gpu-a", "10.0.0.11", [CHAT, solo, off]), view("gpu-b", "[2001:db8::12]")]
    plan = router_plan(hosts, "router", {"lab-chat": 9000})
    assert plan["findings"] == []
    assert [(s["name"], s["port"]) for s in plan["services"]] == [("lab-chat", 9000)]
    backends = plan["services"][0]["backends"]
    assert rotation_files(plan["services"])[1]["content"] == "server [2001:db8::12]:8000 max_fails=1 fail_timeout=5s;\n"
    assert backends[0]["rotation_file"].endswith("/9000-gpu-a.conf")


@pytest.mark.parametrize(
    ("hosts", "router_ports", "router_host", "expected"),
    [
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", keys={"lab-chat": KEY + "x"})], {}, "router",
                     ["gpu-b: field api_gateway_keys[lab-chat]: the hosts of service lab-chat do not resolve the same "
                      "key (by sha256; keys are not shown): gpu-a (api_gateway_keys[lab-chat]) use key #1; "
                      "gpu-b (api_gateway_keys[lab-chat]) use key #2."], id="keys-differ"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", keys={}, host_key=KEY + "y")], {}, "router",
                     ["gpu-b (api_gateway_host_key) use key #2"], id="host-key-differs"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", keys={}, generate_keys=True)], {}, "router",
                     ["gpu-b: field api_gateway_keys[lab-chat]: the key of service lab-chat is generated on gpu-b"],
                     id="generated"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", keys={})], {}, "router",
                     ["gpu-b: field api_gateway_keys[lab-chat]: gpu-b serves lab-chat but has no key"], id="no-key"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", [{**CHAT, "service_port": 8010}])], {}, "router",
                     ["router: field router_ports[lab-chat]: the hosts of service lab-chat serve it on different "
                      "service ports (8000, 8010)"], id="ports-differ"),
        pytest.param(HOSTS, {"lab-chta": 9000}, "router",
                     ["router: field router_ports[lab-chta]: router_ports names lab-chta, which no host"], id="typo"),
        pytest.param(HOSTS, {"lab-chat": 70000}, "router",
                     ["router: field router_ports[lab-chat]: 70000 is not a TCP port."], id="bad-port"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", [{**CHAT, "served_model_name": "other"}],
                                     keys={"other": KEY})], {}, "router",
                     ["router: field router_ports[other]: services lab-chat and other would both listen on router "
                      "port 8000."], id="two-services-one-port"),
        pytest.param(HOSTS, {}, "gpu-a",
                     ["gpu-a: field router_ports[lab-chat]: router port 8000 of service lab-chat is also a port of "
                      "gpu-a's own gateway"], id="router-on-a-gpu-host"),
        pytest.param([view("gpu-a", "10.0.0.11; include /etc/shadow")], {}, "router",
                     ["gpu-a: field router_backend_address: '10.0.0.11; include /etc/shadow' is not an address"],
                     id="address"),
        pytest.param([HOSTS[0], view("gpu-b", "10.0.0.12", tls=True)], {}, "router",
                     ["gpu-b: field api_gateway_tls_certificate: gpu-b serves its gateway over TLS, but the router "
                      "connects to the hosts' gateways over plain HTTP."], id="tls-backend"),
    ],
)
def test_refusals_name_host_field_why_and_fix(hosts, router_ports, router_host, expected):
    findings = router_plan(hosts, router_host, router_ports)["findings"]
    assert len(findings) == len(expected), findings
    for finding, start in zip(findings, expected, strict=True):
        assert start in finding
        assert " Why: " in finding and " Fix: " in finding
        assert KEY not in finding


def test_a_refused_key_is_not_in_the_plan():
    plan = router_plan([HOSTS[0], view("gpu-b", "10.0.0.12", keys={}, generate_keys=True)], "router")
    assert plan["services"][0]["key"] is None


def test_the_host_key_is_the_key_when_every_host_has_the_same():
    hosts = [view("gpu-a", "10.0.0.11", keys={}, host_key=KEY), HOSTS[1]]
    plan = router_plan(hosts, "router")
    assert (plan["findings"], plan["services"][0]["key"]) == ([], KEY)


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ({"all": ["a", "b"], "volta": ["a", "b"]}, ["a", "b"]),
        ({"all": ["a", "b", "r"], "volta": ["a", "b"], "volta_router": ["r"]}, ["a", "b"]),
        ({"all": ["a", "b"], "volta": ["a", "b"], "volta_router": ["b"]}, ["a", "b"]),
        ({"all": ["a", "x"], "volta_router": []}, ["a", "x"]),
    ],
)
def test_serving_hosts_leave_out_the_router_only_hosts(groups, expected):
    assert serving_hosts(groups) == expected


def test_router_sources_from_the_variable_the_inventory_address_or_the_facts():
    routers = [
        {"host": "r1", "source": ["10.0.0.2", "2001:db8::2"], "ansible_host": "r1.example"},
        {"host": "r2", "ansible_host": "10.0.0.3"},
        {"host": "r3", "ansible_host": "r3.example", "facts_ipv4": "172.18.0.4"},
        {"host": "r4", "ansible_host": "r4.example"},
        {"host": "r5", "source": "not-an-address"},
    ]
    out = router_sources(routers)
    assert out["cidrs"] == ["10.0.0.2/32", "2001:db8::2/128", "10.0.0.3/32", "172.18.0.4/32"]
    assert [p.split(":")[0] for p in out["problems"]] == ["r4", "r5"]
    assert "set router_source_address for r4" in out["problems"][0]


PROC_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0200A8C0:C350 0B00000A:1F40 01 00000000:00000000 00:00000000 00000000    33        0 1
   1: 0200A8C0:C351 0B00000A:1F40 06 00000000:00000000 00:00000000 00000000    33        0 2
   2: 0200A8C0:C352 0C00000A:1F40 01 00000000:00000000 00:00000000 00000000    33        0 3
   3: 0200A8C0:C353 0B00000A:1F41 01 00000000:00000000 00:00000000 00000000    33        0 4
"""
PROC_TCP6 = """  sl  local_address remote_address st
   0: 00000000000000000000000001000000:C354 0000000000000000FFFF00000B00000A:1F40 01 0
   1: 00000000000000000000000001000000:C355 B80D0120000000000000000012000000:1F40 01 0
"""


@pytest.mark.parametrize(
    ("text", "addresses", "expected"),
    [
        (PROC_TCP, ["10.0.0.11"], 1),  # TIME_WAIT (06) and another port are not counted
        (PROC_TCP, ["10.0.0.12"], 1),
        (PROC_TCP + PROC_TCP6, ["10.0.0.11"], 2),  # an IPv4-mapped address of tcp6
        (PROC_TCP6, ["2001:db8::12"], 1),
        (PROC_TCP, ["10.0.0.13"], 0),
    ],
)
def test_established_connections_to_one_address_and_port(text, addresses, expected):
    assert established_to(text, addresses, 8000) == expected


# Issue 52: the hardening of the router's plan.

BIG = {"name": "big", "engine": "vllm", "model": "/srv/models/lab-chat", "served_model_name": "lab-big", "gpus": [0, 1],
       "port": 8010, "service_port": 8000, "cluster": {"members": ["mn-head", "mn-worker"], "interface": "eth0"}}


@pytest.mark.parametrize(("instance", "port", "key_name"), [({**BIG, "service_port": None}, 8010, "big"),
                                                            (BIG, 8000, "lab-big")])
def test_a_multi_host_instance_is_served_by_its_head_only(instance, port, key_name):
    """The workers of a Ray cluster have no listener: the head is the one backend, on the instance's own port
    with its own key (service_port, which preflight refuses on such an instance, is read as before)."""
    hosts = [view("mn-head", "10.0.0.21", [instance], keys={key_name: KEY}),
             view("mn-worker", "10.0.0.22", [instance], keys={key_name: KEY}),
             view("mn-head2", "10.0.0.23", [{**instance, "cluster": {"members": ["mn-head2", "mn-w2"]}}],
                  keys={key_name: KEY})]
    plan = router_plan(hosts, "router")
    assert plan["findings"] == []
    (service,) = plan["services"]
    assert (service["name"], service["port"], service["key"], service["key_field"]) == (
        "lab-big", port, KEY, f"api_gateway_keys[{key_name}]")
    assert [(b["host"], b["port"]) for b in service["backends"]] == [("mn-head", port), ("mn-head2", port)]


@pytest.mark.parametrize("name", ["x;server evil.example backup;#", "../x", "gpu b", ".hidden", "a/b"])
def test_an_unsafe_inventory_name_is_refused_and_never_reaches_a_path(name):
    plan = router_plan([HOSTS[0], view(name, "10.0.0.12")], "router")
    (finding,) = plan["findings"]
    assert finding.startswith(f"{name}: field inventory_hostname: the inventory name {name!r} holds characters other")
    assert "Fix: rename the host in the inventory" in finding
    path = plan["services"][0]["backends"][1]["rotation_file"]
    assert path.startswith("/etc/nginx/volta-router/rotation/8000-")
    tail = path.rsplit("/", 1)[1]
    assert name not in path and ".." not in tail and not set(tail) & set(" ;#{}/")


def test_a_safe_name_keeps_its_rotation_file_name():
    assert safe_id("gpu-a.example_1") == "gpu-a.example_1"
    assert safe_id("x;y") != safe_id("x y")


@pytest.mark.parametrize(
    ("address", "why"),
    [("10.0.0.12:8000", "'10.0.0.12:8000' carries a port"), ("gpu-b:8000", "'gpu-b:8000' carries a port"),
     ("10.0.0.12; include /etc/shadow", "is not an IP address or a host name")],
)
def test_a_backend_address_with_a_port_or_syntax_is_refused(address, why):
    (finding,) = router_plan([HOSTS[0], view("gpu-b", address)], "router")["findings"]
    assert finding.startswith(f"gpu-b: field router_backend_address: {address!r} is not an address")
    assert why in finding


@pytest.mark.parametrize(("ssh_port", "router_ports", "refused"),
                         [(22, {"lab-chat": 22}, True), (2222, {"lab-chat": 22}, False), (8000, {}, True)])
def test_a_router_port_on_the_router_hosts_ssh_port_is_refused(ssh_port, router_ports, refused):
    findings = router_plan(HOSTS, "router", router_ports, ssh_port=ssh_port)["findings"]
    port = router_ports.get("lab-chat", 8000)
    expected = [f"router: field router_ports[lab-chat]: router port {port} of service lab-chat is the port router's "
                "sshd listens on (ansible_port, default 22)."]
    assert [f.split(" Why:")[0] for f in findings] == (expected if refused else [])


def test_router_ports_written_as_a_list_is_refused():
    (finding,) = router_plan(HOSTS, "router", [{"lab-chat": 9000}])["findings"]
    assert finding.startswith("router: field router_ports: router_ports is a list ([{'lab-chat': 9000}]), not a "
                              "mapping of service names to ports.")


@pytest.mark.parametrize(
    ("listen", "url"),
    [("", "http://127.0.0.1:8000"), ("10.0.0.2", "http://10.0.0.2:8000"), ("fd00::2", "http://[fd00::2]:8000"),
     ("0.0.0.0", "http://127.0.0.1:8000"), ("::", "http://[::1]:8000")],  # noqa: S104  listen addresses
)
def test_the_probe_calls_the_address_the_router_listens_on(listen, url):
    assert probe_url(listen, 8000) == url


def test_listen_ports_are_the_valid_ports_of_the_plan():
    plan = router_plan(HOSTS, "router", {"lab-chat": 9000})
    assert listen_ports(plan) == [9000]


def test_router_sources_refuse_host_bits_instead_of_widening():
    out = router_sources([{"host": "r1", "source": "10.0.0.2/8"}])
    assert out["cidrs"] == []
    (problem,) = out["problems"]
    assert problem.startswith("r1: field router_source_address: '10.0.0.2/8' is not an IP address or network: "
                              "'10.0.0.2/8' has host bits set")
    assert "write 10.0.0.0/8 for the whole network, or 10.0.0.2/32 for the single address" in problem


def test_a_router_on_a_volta_host_has_its_ports_opened_to_the_api_clients():
    """The serving plan shares the router's ports of the host (shared.router_ports, filter router_listen_ports);
    the firewall opens them like the gateway's ports (to firewall_api_cidrs)."""
    from ansible_collections.volta.serving.plugins.filter.router import router_listen_ports
    from ansible_collections.volta.serving.plugins.plugin_utils._firewall_plan import ports

    serving = {"volta_instances": [CHAT], "api_gateway_keys": {"lab-chat": KEY}}
    hostvars = {"gpu-a": {"ansible_host": "10.0.0.11", "router_ports": {"lab-chat": 9000}, **serving},
                "gpu-b": {"ansible_host": "10.0.0.12", **serving}}
    groups = {"all": ["gpu-a", "gpu-b"], "volta": ["gpu-a", "gpu-b"], "volta_router": ["gpu-a"]}
    assert router_listen_ports(groups, hostvars, "gpu-a") == [9000]
    assert router_listen_ports(groups, hostvars, "gpu-b") == []
    plan = {"plan": {"gateway_ports": [8000, 8001], "instances": [], "shared": {"router_ports": [9000]}}}
    assert ports(plan, "gpu-a", groups["volta"], 22)["gateway"] == [8000, 8001, 9000]


def test_the_head_of_a_multi_host_instance_opens_its_port_to_the_router():
    from ansible_collections.volta.serving.plugins.plugin_utils._firewall_plan import ports

    head = {"public_port": 8010, "backend_port": 18010, "cluster": {"role": "head", "members": ["mn-head", "mn-w"]}}
    plan = {"plan": {"gateway_ports": [8010], "instances": [head]}}
    assert ports(plan, "mn-head", ["mn-head", "mn-w"], 22)["router"] == [8010]
    assert ports(plan, "mn-head", [], 22)["router"] == []
