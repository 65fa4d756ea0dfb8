# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _firewall_ray: a Ray cluster's interface, member addresses and ports, refused before any change."""

from __future__ import annotations

import pytest
import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import firewall_ray_problems as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _firewall_ray as fr

TCP_PORTS = ["6379", "6380", "6381", "6382", "6383", "6384", "6385", "10001", "20000-20199"]


def ray(**changes):
    """The plan's ray entry of server-c, a worker of big-pp2 (the serving plan's contract)."""
    return {
        "instance": "big-pp2", "role": "worker", "head": "server-a", "interface": "ens1f0",
        "address": "10.0.0.2", "head_address": "10.0.0.1",
        "members": [{"host": "server-a", "address": "10.0.0.1"}, {"host": "server-c", "address": "10.0.0.2"}],
        "peers": ["10.0.0.1"], "tcp_ports": list(TCP_PORTS), **changes,
    }


def test_no_cluster_and_a_good_cluster_pass():
    assert fr.ray_problems(None, "server-c") == []
    assert fr.ray_problems(ray(), "server-c", open_ports=[22, 8000, 18001]) == []


@pytest.mark.parametrize("interface", ["ens1f0 ", "eth0;drop", 'en"s1', "a-very-long-name0", "", None, 7])
def test_an_interface_nft_and_ufw_do_not_take_is_refused_naming_the_variable(interface):
    (problem,) = fr.ray_problems(ray(interface=interface), "server-c")
    assert problem == (
        f"server-c: volta_instances[].cluster.interface of instance big-pp2 is {interface!r}, not an interface "
        "name nft and ufw accept (1 to 15 of A-Z a-z 0-9 _ . : -). Why: the firewall opens Ray's ports on the "
        "cluster interface only and writes its name into the rules as it is; Linux allows 15 characters and ufw "
        "refuses other ones. Fix: set cluster.interface of "
        "big-pp2 to the cluster network's interface as `ip -br link` shows it on every member. "
        "Nothing was changed.")


@pytest.mark.parametrize("interface", ["ens1f0", "eth0.100", "bond0:1", "enp94s0f0np0", "ib_0-a"])
def test_interface_names_linux_allows_pass(interface):
    assert fr.ray_problems(ray(interface=interface), "server-c") == []


@pytest.mark.parametrize("peer", ["fd00::1", "10.0.0.0/24", "010.0.0.1", " 10.0.0.1", "0.0.0.0",  # noqa: S104
                                  "127.0.0.1", "224.0.0.1", "255.255.255.255", "server-a", None])
def test_a_peer_that_is_not_an_ipv4_host_address_is_refused_naming_the_member(peer):
    members = [{"host": "server-a", "address": peer}, {"host": "server-c", "address": "10.0.0.2"}]
    (problem,) = fr.ray_problems(ray(peers=[peer], members=members), "server-c")
    assert problem.startswith(
        f"server-c: the Ray cluster of instance big-pp2: member address(es) server-a {peer!r} on "
        "volta_instances[].cluster.interface (ens1f0) are not IPv4 host addresses. Why: ")
    assert "Fix: give every member one IPv4 address on ens1f0" in problem
    assert problem.endswith("Nothing was changed.")


def test_every_bad_peer_is_listed_at_once():
    members = [{"host": "server-a", "address": "10.0.0.1"}, {"host": "server-b", "address": "fd00::2"},
               {"host": "server-c", "address": "10.0.0.2"}]
    (problem,) = fr.ray_problems(ray(peers=["10.0.0.1", "fd00::2", "fd00::9"], members=members), "server-c")
    assert "member address(es) server-b 'fd00::2', a member 'fd00::9' on" in problem


@pytest.mark.parametrize("peers", [[], None, "10.0.0.1"])
def test_no_other_member_is_refused(peers):
    (problem,) = fr.ray_problems(ray(peers=peers), "server-c")
    assert problem.startswith("server-c: the Ray cluster of instance big-pp2 has no other member's address on ens1f0")
    assert "volta_instances[].cluster.interface (ens1f0)" in problem


def test_interface_and_peer_problems_are_reported_together():
    found = fr.ray_problems(ray(interface="bad/if", peers=["fd00::1"]), "server-c")
    assert [p.split(". Why", maxsplit=1)[0][:40] for p in found] == [
        "server-c: volta_instances[].cluster.inte", "server-c: the Ray cluster of instance bi"]


@pytest.mark.parametrize("ports", [["6379", "0"], ["6379", "20199-20000"], ["65536"], [6379], ["63 79"], [], None])
def test_ports_that_are_not_tcp_ports_or_ranges_are_refused(ports):
    (problem,) = fr.ray_problems(ray(tcp_ports=ports), "server-c")
    assert problem.startswith("server-c: Ray's ports of instance big-pp2 (")
    assert "Fix: set engine_service_ray_ports to TCP port numbers from 1 to 65535" in problem


@pytest.mark.parametrize(("open_ports", "taken"), [
    ([6379, 22], "6379"), (["10001"], "10001"), ([20000, 20150, 20199, 20200], "20000, 20150, 20199")])
def test_a_ray_port_opened_to_other_networks_is_refused(open_ports, taken):
    (problem,) = fr.ray_problems(ray(), "server-c", open_ports=open_ports)
    assert problem.startswith(f"server-c: port(s) {taken} are Ray's ports of the cluster of instance big-pp2 and "
                              "also opened to other networks")
    assert "Fix: remove them from those variables, or move engine_service_ray_ports apart." in problem


def test_an_entry_that_is_not_a_mapping_is_refused():
    (problem,) = fr.ray_problems(["ens1f0"], "server-c")
    assert problem.startswith("server-c: the serving plan's ray entry is ['ens1f0'], not a mapping.")


def test_port_range_reads_the_plans_strings():
    assert [fr.port_range(v) for v in ("6379", "20000-20199", "7-7", "1-65535")] == [
        (6379, 6379), (20000, 20199), (7, 7), (1, 65535)]
    assert fr.port_numbers(ray(tcp_ports=["6379", "20000-20002"])) == {6379, 20000, 20001, 20002}


def test_filter_is_registered_under_its_documented_name():
    assert plugin.FilterModule().filters() == {"firewall_ray_problems": plugin.firewall_ray_problems}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "firewall_ray_problems"


def test_filter_through_jinja():
    templar = Templar(loader=None, variables={"ray": ray(interface="bad/if"), "none_ray": None})
    templar.environment.filters["firewall_ray_problems"] = plugin.firewall_ray_problems
    found = templar.template(trust_as_template("{{ ray | firewall_ray_problems(host='server-c', open_ports=[6379]) }}"))
    assert len(found) == 2 and found[0].startswith("server-c: volta_instances[].cluster.interface")
    assert found[1].startswith("server-c: port(s) 6379 are Ray's ports")
    assert templar.template(trust_as_template("{{ none_ray | firewall_ray_problems(host='server-c') }}")) == []
