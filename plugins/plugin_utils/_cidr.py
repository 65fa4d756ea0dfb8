# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate and split firewall source networks (CIDRs) into IPv4 and IPv6 lists.

Pure Python (the standard ``ipaddress`` module), no Ansible imports, so unit tests import it
directly. Private to the collection (leading underscore): no compatibility promise outside
volta.serving. Used by the ``volta.serving.cidr_split`` filter, which the firewall role calls
because ``ansible.utils`` is not a dependency of this collection.
"""

from __future__ import annotations

import ipaddress


def _problem(value, why, fix):
    return {"value": value, "why": why, "fix": fix, "message": f"{value!r}: {why}. Fix: {fix}."}


def check_cidr(value):
    """Return ``(network, None)`` for a valid network, ``(None, problem)`` otherwise.

    Accepted: a network in CIDR notation (``10.0.0.0/8``, ``2001:db8::/32``) or a single address
    (``192.0.2.7`` means ``192.0.2.7/32``). Refused: anything that is not a string, an empty
    string, a network with host bits set (``10.0.0.5/24``: the fix names ``10.0.0.0/24``), and
    text that is no address at all. A problem is ``{"value", "why", "fix", "message"}``.
    """
    if isinstance(value, bool) or not isinstance(value, str):
        return None, _problem(
            value,
            f"{value!r} is a {type(value).__name__}, not a network written as a string",
            "quote it, for example \"10.0.0.0/8\"",
        )
    text = value.strip()
    if not text:
        return None, _problem(value, "an empty string is no network", "remove it or write a network such as 10.0.0.0/8")
    try:
        return ipaddress.ip_network(text, strict=True), None
    except ValueError as exc:
        message = str(exc)
    try:
        loose = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None, _problem(
            value,
            f"{text!r} is not an IPv4 or IPv6 network ({message})",
            "write a network in CIDR notation, for example 192.0.2.0/24 or 2001:db8::/32",
        )
    return None, _problem(
        value,
        f"{text!r} has host bits set, so it is unclear which network is meant",
        f"write {loose.with_prefixlen} for the whole network, or "
        f"{ipaddress.ip_network(text.split('/')[0]).with_prefixlen} for the single address",
    )


def split_cidrs(values):
    """Split *values* into ``{"ipv4": [...], "ipv6": [...], "problems": [...]}``.

    Networks are written back in their canonical form (``::/0``, ``10.0.0.0/8``, a single
    address as ``/32`` or ``/128``), without duplicates, in the order given. ``None`` is an
    empty list; a single string is a list of one. Every invalid entry is reported, not only
    the first.
    """
    if values is None:
        values = []
    elif isinstance(values, str):
        values = [values]
    elif not isinstance(values, (list, tuple)):
        return {
            "ipv4": [],
            "ipv6": [],
            "problems": [
                _problem(
                    values,
                    f"a list of networks was expected, not a {type(values).__name__}",
                    "write a YAML list, for example [\"10.0.0.0/8\", \"2001:db8::/32\"]",
                )
            ],
        }
    result = {"ipv4": [], "ipv6": [], "problems": []}
    for value in values:
        network, problem = check_cidr(value)
        if problem:
            result["problems"].append(problem)
            continue
        key = "ipv4" if network.version == 4 else "ipv6"
        text = network.with_prefixlen
        if text not in result[key]:
            result[key].append(text)
    return result
