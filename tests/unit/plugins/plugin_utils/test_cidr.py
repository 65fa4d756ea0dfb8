# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_cidr.py (firewall source networks)."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import check_cidr, split_cidrs

# value -> canonical network (valid entries)
VALID = [
    ("10.0.0.0/8", "10.0.0.0/8"),
    ("0.0.0.0/0", "0.0.0.0/0"),
    ("::/0", "::/0"),
    ("192.0.2.7", "192.0.2.7/32"),
    ("192.0.2.7/32", "192.0.2.7/32"),
    (" 172.16.0.0/12 ", "172.16.0.0/12"),
    ("2001:DB8::/32", "2001:db8::/32"),
    ("2001:db8:0:0::1", "2001:db8::1/128"),
    ("fe80::/10", "fe80::/10"),
]

# value -> a piece of the reason, a piece of the fix
INVALID = [
    ("10.0.0.5/24", "host bits set", "10.0.0.0/24"),
    ("10.0.0.5/24", "host bits set", "10.0.0.5/32"),
    ("2001:db8::1/32", "host bits set", "2001:db8::/32"),
    ("", "empty string", "remove it"),
    ("   ", "empty string", "remove it"),
    ("10.0.0.0/33", "not an IPv4 or IPv6 network", "CIDR notation"),
    ("256.1.1.1", "not an IPv4 or IPv6 network", "CIDR notation"),
    ("any", "not an IPv4 or IPv6 network", "CIDR notation"),
    ("10.0.0.0/8,10.1.0.0/16", "not an IPv4 or IPv6 network", "CIDR notation"),
    ("example.org", "not an IPv4 or IPv6 network", "CIDR notation"),
    (10, "is a int", "quote it"),
    (None, "is a NoneType", "quote it"),
    (True, "is a bool", "quote it"),
    (["10.0.0.0/8"], "is a list", "quote it"),
]


@pytest.mark.parametrize(("value", "canonical"), VALID)
def test_valid_networks_are_canonical(value, canonical):
    network, problem = check_cidr(value)
    assert problem is None
    assert network.with_prefixlen == canonical


@pytest.mark.parametrize(("value", "why", "fix"), INVALID)
def test_invalid_networks_say_why_and_fix(value, why, fix):
    network, problem = check_cidr(value)
    assert network is None
    assert problem["value"] == value
    assert why in problem["why"]
    assert fix in problem["fix"]
    assert problem["message"].startswith(repr(value) + ": ")
    assert "Fix: " in problem["message"]


@pytest.mark.parametrize(
    ("values", "ipv4", "ipv6", "bad"),
    [
        (None, [], [], []),
        ([], [], [], []),
        ("10.0.0.0/8", ["10.0.0.0/8"], [], []),
        (["0.0.0.0/0", "::/0"], ["0.0.0.0/0"], ["::/0"], []),
        (
            ["2001:db8::/32", "192.0.2.7", "10.0.0.0/8", "192.0.2.7/32", "2001:DB8::/32"],
            ["192.0.2.7/32", "10.0.0.0/8"],
            ["2001:db8::/32"],
            [],
        ),
        (["10.0.0.0/8", "10.0.0.5/24", "nope", "::1"], ["10.0.0.0/8"], ["::1/128"], ["10.0.0.5/24", "nope"]),
        ({"a": "10.0.0.0/8"}, [], [], [{"a": "10.0.0.0/8"}]),
        (8, [], [], [8]),
    ],
)
def test_split(values, ipv4, ipv6, bad):
    result = split_cidrs(values)
    assert result["ipv4"] == ipv4
    assert result["ipv6"] == ipv6
    assert [p["value"] for p in result["problems"]] == bad


def test_every_problem_is_reported_not_only_the_first():
    result = split_cidrs(["a", "b", "10.0.0.1/8", "c"])
    assert len(result["problems"]) == 4
