# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _firewall_state: the readings of systemctl, dpkg-query, nft and ufw output."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _firewall_state as fs

# The shape of `nft list table inet volta_firewall` for the role's template (nft 1.0.6, Debian 12).
TABLE = """table inet volta_firewall {
\tset ssh_v4 {
\t\ttype ipv4_addr
\t\tflags interval
\t\tauto-merge
\t\telements = { 172.18.0.3 }
\t}

\tchain input {
\t\ttype filter hook input priority filter; policy drop;
\t\ttcp dport 22 ip saddr @ssh_v4 accept comment "volta: ssh"
\t\tiifname "lo" accept comment "volta: loopback"
\t\tct state established,related accept comment "volta: replies"
\t}

\tchain forward {
\t\ttype filter hook forward priority filter; policy drop;
\t\tct state established,related accept comment "volta: replies"
\t}
}
"""

UFW = """Status: active
Logging: on (low)
Default: deny (incoming), allow (outgoing), deny (routed)
New profiles: skip

To                         Action      From
--                         ------      ----
22/tcp                     ALLOW IN    192.0.2.0/24               # volta: ssh
8001/tcp                   ALLOW IN    192.0.2.0/24               # volta: gateway
"""


def test_active_units_in_order():
    assert fs.active_units(["ufw", "firewalld", "nftables"], "inactive\nactive\nactive\n") == ["firewalld", "nftables"]


def test_missing_packages():
    out = "nftables installed\nufw not-installed\n"
    assert fs.missing_packages(["nftables", "ufw", "iptables"], out) == ["ufw", "iptables"]
    assert fs.missing_packages(["nftables"], "nftables:amd64 installed\n") == []


def test_nft_chain_stops_at_its_brace():
    lines = fs.nft_chain(TABLE, "input")
    assert lines[0] == "chain input {" and lines[-1] == "}"
    assert not any("forward" in line for line in lines)


def test_nft_good_table_has_no_problem():
    assert fs.nft_problems(TABLE, 22) == []


@pytest.mark.parametrize(("text", "port", "problem"), [
    (TABLE.replace("hook input priority filter; policy drop;", "hook input priority filter; policy accept;"),
     22, "the input chain's policy is not drop"),
    (TABLE, 2222, "the first rule is not SSH (tcp dport 2222 ... accept): tcp dport 22 ip saddr"),
    ("", 22, "there is no input chain"),
    (TABLE.replace('\t\ttcp dport 22 ip saddr @ssh_v4 accept comment "volta: ssh"\n', ""), 22,
     'the first rule is not SSH (tcp dport 22 ... accept): iifname "lo" accept'),
])
def test_nft_problems(text, port, problem):
    problems = fs.nft_problems(text, port)
    assert any(p.startswith(problem) for p in problems), problems


def test_ufw_good_status_has_no_problem():
    assert fs.ufw_problems(UFW, 22) == []


@pytest.mark.parametrize(("text", "port", "problem"), [
    ("Status: inactive\n", 22, "ufw is not active"),
    (UFW.replace("deny (incoming)", "allow (incoming)"), 22, "incoming is not denied by default"),
    (UFW, 2222, "the first rule is not SSH (2222/tcp ALLOW IN): 22/tcp"),
    ("Status: active\nDefault: deny (incoming)\n", 22, "ufw has no rule"),
])
def test_ufw_problems(text, port, problem):
    problems = fs.ufw_problems(text, port)
    assert any(p.startswith(problem) for p in problems), problems
