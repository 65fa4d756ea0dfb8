# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall's part of a Ray cluster: the serving plan's ``ray`` entry, checked before any change.

Pure Python, no Ansible imports. Served by the ``volta.serving.firewall_ray_problems`` filter to
volta.serving.firewall's plan phase (tasks/plan.yml). The firewall opens Ray's TCP ports
(``ray["tcp_ports"]``) to the other members' IPv4 addresses (``ray["peers"]``) on the cluster interface
(``ray["interface"]``) only, and to no one else; the rules are in the role's templates
(``nftables.conf.j2``, ``ufw-rules.sh.j2``). What these checks refuse would make ``nft -f`` or a ufw
command fail, or open Ray's ports to the wrong hosts. Each refusal names the host, the variable, why
and the fix, and ends with "Nothing was changed.".
"""

from __future__ import annotations

import ipaddress
import re

# An interface name as Linux allows it (IFNAMSIZ 16 with the NUL) and nft and ufw take it as written
# (the same shape as _cluster's cluster.interface).
IFACE_RE = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
# A TCP port or a range, as the plan writes Ray's ports: "6379" or "20000-20199".
PORT_RE = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?")
WHERE = "volta_instances[].cluster.interface"


def _instance(ray):
    return str(ray.get("instance") or "?")


def _peer_host(ray, address):
    """The member whose address *address* is, for the message (or "a member")."""
    for member in ray.get("members") or []:
        if isinstance(member, dict) and member.get("address") == address:
            return str(member.get("host"))
    return "a member"


def is_peer_address(value):
    """True for an IPv4 host address written canonically (``10.0.0.1``; not a network, IPv6, 0.0.0.0,
    loopback, multicast or broadcast)."""
    if not isinstance(value, str):
        return False
    try:
        address = ipaddress.IPv4Address(value)
    except ValueError:
        return False
    return (str(address) == value and not (address.is_unspecified or address.is_loopback or address.is_multicast)
            and value != "255.255.255.255")


def port_range(value):
    """``(first, last)`` of a port or range string of the plan (``"6379"``, ``"20000-20199"``), or None."""
    match = PORT_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return None
    first = int(match.group(1))
    last = int(match.group(2) or first)
    return (first, last) if 1 <= first <= last <= 65535 else None


def interface_problem(host, ray):
    interface = ray.get("interface")
    if isinstance(interface, str) and IFACE_RE.fullmatch(interface):
        return ""
    return (f"{host}: {WHERE} of instance {_instance(ray)} is {interface!r}, not an interface name nft and ufw "
            "accept (1 to 15 of A-Z a-z 0-9 _ . : -). Why: the firewall opens Ray's ports on the cluster "
            "interface only and writes its name into the rules as it is; Linux allows 15 characters and ufw "
            "refuses other ones. Fix: set cluster.interface of "
            f"{_instance(ray)} to the cluster network's interface as `ip -br link` shows it on every member. "
            "Nothing was changed.")


def peers_problem(host, ray):
    peers = ray.get("peers")
    interface = ray.get("interface")
    if not isinstance(peers, list) or not peers:
        return (f"{host}: the Ray cluster of instance {_instance(ray)} has no other member's address on "
                f"{interface} (peers {peers!r}). Why: the firewall opens Ray's ports to the other members only, "
                f"and with none a rule cannot be written. Fix: list the other hosts in cluster.members and give "
                f"each an IPv4 address on {WHERE} ({interface}). Nothing was changed.")
    bad = [f"{_peer_host(ray, peer)} {peer!r}" for peer in peers if not is_peer_address(peer)]
    if not bad:
        return ""
    return (f"{host}: the Ray cluster of instance {_instance(ray)}: member address(es) {', '.join(bad)} on "
            f"{WHERE} ({interface}) are not IPv4 host addresses. Why: the firewall opens Ray's ports to the "
            "other members' IPv4 addresses only (Ray, NCCL and Gloo bind that address); anything else would "
            "open them to the wrong hosts or fail to load. Fix: give every member one IPv4 address on "
            f"{interface}, or set cluster.interface to the interface that has one, and gather the members' "
            "facts in the same run. Nothing was changed.")


def ports_problem(host, ray):
    ports = ray.get("tcp_ports")
    bad = [repr(p) for p in ports if port_range(p) is None] if isinstance(ports, list) and ports else [repr(ports)]
    if not bad:
        return ""
    return (f"{host}: Ray's ports of instance {_instance(ray)} ({', '.join(bad)}) are not TCP ports or ranges. "
            "Why: the firewall would not open what Ray listens on. Fix: set engine_service_ray_ports to TCP "
            "port numbers from 1 to 65535 (worker_min not above worker_max). Nothing was changed.")


def port_numbers(ray):
    """Every TCP port number of ``ray["tcp_ports"]``, the ranges expanded (the ones that parse)."""
    out = set()
    for value in ray.get("tcp_ports") or []:
        found = port_range(value)
        if found:
            out.update(range(found[0], found[1] + 1))
    return out


def overlap_problem(host, ray, open_ports):
    taken = sorted(port_numbers(ray) & {int(p) for p in open_ports})
    if not taken:
        return ""
    return (f"{host}: port(s) {', '.join(str(p) for p in taken)} are Ray's ports of the cluster of instance "
            f"{_instance(ray)} and also opened to other networks (the gateway or service ports, "
            "firewall_extra_tcp_ports, firewall_metrics_tcp_ports or firewall_ssh_port). Why: Ray's ports take "
            "the cluster's work (tasks that run code on this host) and are opened to the cluster's other members "
            "only. Fix: remove them from those variables, or move engine_service_ray_ports apart. "
            "Nothing was changed.")


def ray_problems(ray, host, open_ports=()):
    """Every refusal of the plan's *ray* entry for *host* (empty for None: the host is in no Ray cluster).

    *open_ports*: the TCP ports the firewall opens to other networks (gateway, service, extra, metrics and
    SSH ports): none of them may be one of Ray's.
    """
    if ray is None:
        return []
    if not isinstance(ray, dict):
        return [f"{host}: the serving plan's ray entry is {ray!r}, not a mapping. Why: the firewall reads the "
                "Ray cluster's interface, members and ports from it. Fix: report this as a bug of volta.serving "
                "(plugins/plugin_utils/_cluster.py ray_plan). Nothing was changed."]
    found = [interface_problem(host, ray), peers_problem(host, ray), ports_problem(host, ray)]
    found.append(overlap_problem(host, ray, open_ports) if not found[2] else "")
    return [problem for problem in found if problem]
