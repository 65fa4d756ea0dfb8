# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Ray cluster's ports in the firewall's rulesets: from the cluster's other members only, on its interface.

roles/firewall's templates and main.yml's port report and check rendered with Ansible's templating and the role's
vars/main.yml (as in test_firewall_router.py), for a serving plan with ``ray`` (the plan's contract, and one
built by _cluster.ray_plan) and without it: a host in no Ray cluster gets the same ruleset as before, line
for line. The molecule scenario `multinode` checks Ray's ports closed to a container that is not a member.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter.firewall_plan import firewall_port_check, firewall_ports
from ansible_collections.volta.serving.plugins.filter.firewall_ray_problems import firewall_ray_problems
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs
from ansible_collections.volta.serving.plugins.plugin_utils._cluster import ray_plan

ROLE = Path(__file__).resolve().parents[3] / "roles" / "firewall"
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
PLAN_TASKS = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
# engine_service_ray_ports' defaults.
PORTS = {"gcs": 6379, "client_server": 10001, "node_manager": 6380, "object_manager": 6381,
         "runtime_env_agent": 6382, "dashboard_agent_grpc": 6383, "dashboard_agent_listen": 6384,
         "metrics_export": 6385, "worker_min": 20000, "worker_max": 20199}
TCP_PORTS = ["6379", "6380", "6381", "6382", "6383", "6384", "6385", "10001", "20000-20199"]
# The plan's ray entry of server-c, a worker of big-pp2 (the serving plan's contract; more keys the firewall
# does not read).
RAY = {
    "instance": "big-pp2", "role": "worker", "head": "server-a", "interface": "ens1f0",
    "address": "10.0.0.2", "head_address": "10.0.0.1",
    "members": [{"host": "server-a", "address": "10.0.0.1"}, {"host": "server-c", "address": "10.0.0.2"}],
    "peers": ["10.0.0.1"], "ports": PORTS, "tcp_ports": TCP_PORTS, "unit": "volta-ray.service",
}
NFT_RULE = ('iifname "ens1f0" ip saddr { 10.0.0.1 } tcp dport { 6379, 6380, 6381, 6382, 6383, 6384, 6385, 10001, '
            '20000-20199 } accept comment "volta: Ray cluster big-pp2 (members only)"')


# The collection's filters the role's vars and main.yml's check call, without the collection loader.
FILTERS = {"volta.serving.firewall_ray_problems": firewall_ray_problems,
           "volta.serving.firewall_ports": firewall_ports,
           "volta.serving.firewall_port_check": firewall_port_check}


def trusted(values):
    """The role's own variables are templates, as Ansible reads them from the role (nested ones too)."""
    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        return {k: trust(v) for k, v in value.items()} if isinstance(value, dict) else value

    return {k: trust(v) for k, v in values.items()}


def plan(ray="absent"):
    """A serving plan with a gateway port 8000 and an engine port 18001, and *ray* (no key: "absent")."""
    out = {"gateway_ports": [8000], "instances": [{"backend_port": 18001}], "services": []}
    if ray != "absent":
        out["ray"] = ray
    return {"plan": out}


def templar(serving_plan, **extra):
    variables = {
        **trusted(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())),
        **trusted({k: v for k, v in VARS.items() if k != "__firewall_ruleset"}),
        "ansible_managed": "managed",
        "inventory_hostname": "server-c",
        "groups": {"all": ["server-a", "server-c"], "volta": ["server-a", "server-c"]},
        "firewall_backend": "nftables",
        "firewall_ssh_cidrs": ["192.0.2.0/24"],
        "firewall_api_cidrs": ["192.0.2.10", "2001:db8::10"],
        "firewall_ssh_port": 22,
        "__firewall_serving_plan": serving_plan,
        # volta.serving.cidr_split's answers (plugins/plugin_utils/_cidr.py), without the collection loader.
        "__firewall_ssh_nets": split_cidrs(["192.0.2.0/24"]),
        "__firewall_api_nets": split_cidrs(["192.0.2.10", "2001:db8::10"]),
        "__firewall_metrics_nets": split_cidrs([]),
        "__firewall_router_nets": split_cidrs([]),
        "__firewall_state": {"live_present": False},
        **extra,
    }
    out = Templar(loader=DataLoader(), variables=variables)
    for name, plugin in FILTERS.items():
        out.environment.filters[name] = plugin
    return out


def render(name, serving_plan, **extra):
    text = (ROLE / "templates" / name).read_text()
    return templar(serving_plan, **extra).template(trust_as_template(text))


def task(name):
    return next(t for t in PLAN_TASKS if t["name"] == name)


def without_ray_lines(text):
    return "\n".join(line for line in text.split("\n") if "Ray" not in line)


def test_nftables_opens_rays_ports_to_the_other_members_on_the_cluster_interface_only():
    conf = render("nftables.conf.j2", plan(RAY))
    lines = [line.strip() for line in conf.splitlines()]
    assert [line for line in lines if "Ray" in line] == [
        "# Ray's ports: from the cluster's other members only, on the cluster interface.", NFT_RULE]
    # In chain input, after the engine ports' drop and the other accept rules, before the chain's default drop.
    rule, engine = lines.index(NFT_RULE), lines.index('tcp dport { 18001 } drop comment "volta: engine ports"')
    gateway = lines.index('tcp dport { 8000 } ip saddr @api_v4 accept comment "volta: gateway"')
    assert lines.index("type filter hook input priority filter; policy drop;") < engine < gateway < rule
    assert rule < lines.index("chain forward {")
    # Nothing else opens Ray's ports: no other rule names one of them.
    assert [line for line in lines if "6379" in line or "20000" in line] == [NFT_RULE]
    # The rule is added and nothing else moves: the ruleset of a host in no cluster, line for line.
    assert without_ray_lines(conf) == render("nftables.conf.j2", plan(None))


@pytest.mark.parametrize("serving_plan", [plan(None), plan(), {"skipped": True}],
                         ids=["ray-none", "no-ray-key", "no-plan"])
def test_no_ray_rule_outside_a_cluster_and_the_ruleset_stays_as_it_was(serving_plan):
    for name in ("nftables.conf.j2", "ufw-rules.sh.j2"):
        text = render(name, serving_plan)
        assert "Ray" not in text and "iifname \"ens" not in text and "allow in on" not in text
    if serving_plan.get("plan"):
        assert render("nftables.conf.j2", serving_plan) == render("nftables.conf.j2", plan("absent"))


def test_the_head_opens_rays_ports_to_every_worker():
    head = {**RAY, "role": "head", "address": "10.0.0.1", "peers": ["10.0.0.2", "10.0.0.3"]}
    (rule,) = [line.strip() for line in render("nftables.conf.j2", plan(head)).splitlines() if "iifname \"ens" in line]
    assert rule.startswith('iifname "ens1f0" ip saddr { 10.0.0.2, 10.0.0.3 } tcp dport { 6379, ')


def test_ufw_allows_each_ray_port_from_each_other_member_on_the_cluster_interface():
    head = {**RAY, "role": "head", "peers": ["10.0.0.2", "10.0.0.3"], "tcp_ports": ["6379", "20000-20199"]}
    script = render("ufw-rules.sh.j2", plan(head), firewall_backend="ufw")
    comment = "comment 'volta: Ray cluster big-pp2 (members only)'"
    assert [line for line in script.splitlines() if "Ray" in line] == [
        "# Ray's ports: from the cluster's other members only, on the cluster interface.",
        f"ufw allow in on ens1f0 from 10.0.0.2 to any port 6379 proto tcp {comment}",
        f"ufw allow in on ens1f0 from 10.0.0.2 to any port 20000:20199 proto tcp {comment}",
        f"ufw allow in on ens1f0 from 10.0.0.3 to any port 6379 proto tcp {comment}",
        f"ufw allow in on ens1f0 from 10.0.0.3 to any port 20000:20199 proto tcp {comment}",
    ]
    lines = script.splitlines()
    first = lines.index(f"ufw allow in on ens1f0 from 10.0.0.2 to any port 6379 proto tcp {comment}")
    assert lines.index("ufw deny proto tcp to any port 18001 comment 'volta: engine port'") < first
    assert first < lines.index("ufw --force enable")
    assert without_ray_lines(script) == render("ufw-rules.sh.j2", plan(None), firewall_backend="ufw")


def test_a_plan_built_by_the_cluster_module_renders_the_same_rule():
    inst = {"name": "big-pp2", "engine": "vllm", "gpus": [0, 1],
            "cluster": {"members": ["server-a", "server-c"], "interface": "ens1f0", "head": "server-a"}}
    members = {"server-a": {"interfaces": {"ens1f0": "10.0.0.1"}}, "server-c": {"interfaces": {"ens1f0": "10.0.0.2"}}}
    built = ray_plan("server-c", inst, members, PORTS, "/etc/volta/secrets")
    # The plan adds the ranks' range (NCCL, Gloo, torch's TCP store: kernel-picked ports) after Ray's.
    want = NFT_RULE.replace("20000-20199 }", "20000-20199, 32768-60999 }")
    assert want in [line.strip() for line in render("nftables.conf.j2", plan(built)).splitlines()]


CHECK = ("Check the engine ports and the Ray cluster's interface, addresses and ports, "
         "and report what the firewall allows")


def check(serving_plan, **extra):
    """main.yml's port check as Ansible runs it: (passes, the message it prints: success_msg or fail_msg)."""
    found = task(CHECK)["volta.serving.check"]
    t = templar(serving_plan, **extra)
    variables = {k: trust_as_template(v) for k, v in task(CHECK)["vars"].items()}
    t = Templar(loader=DataLoader(), variables={**t.available_variables, **variables})
    for name, plugin in FILTERS.items():
        t.environment.filters[name] = plugin
    thats = found["that"] if isinstance(found["that"], list) else [found["that"]]
    passes = all(t.evaluate_expression(trust_as_template(that)) for that in thats)
    return passes, t.template(trust_as_template(found["success_msg" if passes else "fail_msg"]))


def test_the_report_names_rays_ports_peers_and_interface():
    passes, report = check(plan(RAY))
    assert passes is True
    assert report.endswith("from loopback only; Ray ports 6379, 6380, 6381, 6382, 6383, 6384, 6385, 10001, "
                           "20000-20199 from cluster members 10.0.0.1 on ens1f0")
    passes, report = check(plan(None))
    assert passes is True and report.endswith("engine ports 18001 from loopback only")


def test_a_host_in_no_cluster_passes_and_a_bad_interface_is_refused():
    assert check(plan(None))[0] is True and check({"skipped": True})[0] is True
    passes, msg = check(plan({**RAY, "interface": "ens1f0;drop"}))
    assert passes is False
    assert msg.startswith("server-c: volta_instances[].cluster.interface of instance big-pp2 is 'ens1f0;drop', not "
                          "an interface name nft and ufw accept")


def test_the_check_refuses_a_ray_port_opened_to_the_api_networks():
    passes, msg = check(plan(RAY), firewall_extra_tcp_ports=[6379])
    assert passes is False
    assert msg.startswith("server-c: port(s) 6379 are Ray's ports of the cluster of instance big-pp2")


def test_an_engine_port_opened_to_other_networks_is_refused_first():
    passes, msg = check(plan(RAY), firewall_extra_tcp_ports=[18001])
    assert passes is False
    assert msg.startswith("server-c: port(s) 18001 are engine (backend) ports of the serving plan")
