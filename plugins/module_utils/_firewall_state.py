# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the firewall role needs to know about a host, from the text its tools print.

Pure functions over the output of systemctl, dpkg-query, `nft list table` and `ufw status verbose`,
so that they are unit tested without a host. The module (plugins/modules/firewall_state.py) runs
the commands once and returns these readings; the role compares and decides.
"""

from __future__ import annotations

import re

# The lines of an nft chain listing that are not rules.
_NOT_A_RULE = re.compile(r"^(table|chain|type|}|$)")
# A rule line of `ufw status verbose` ("22/tcp  ALLOW IN  192.0.2.0/24  # volta: ssh").
_UFW_RULE = re.compile(r" (ALLOW|DENY|REJECT|LIMIT) ")


def active_units(names, is_active_stdout):
    """The names whose line of `systemctl is-active <name>.service ...` says active (one line each, in order)."""
    states = is_active_stdout.splitlines()
    return [name for name, state in zip(names, states, strict=False) if state.strip() == "active"]


def missing_packages(names, dpkg_stdout):
    """The names that `dpkg-query -W -f '${Package} ${db:Status-Status}\\n' NAMES` does not report installed."""
    installed = set()
    for line in dpkg_stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "installed":
            installed.add(parts[0].split(":")[0])
    return [name for name in names if name not in installed]


def nft_chain(table_text, chain):
    """The lines (stripped) of one chain of an `nft list table` listing, from 'chain <name> {' to its '}'."""
    out, inside = [], False
    for raw in table_text.splitlines():
        line = raw.strip()
        if not inside and line == f"chain {chain} {{":
            inside = True
        if inside:
            out.append(line)
            if line == "}":
                break
    return out


def nft_problems(table_text, ssh_port):
    """Why the live table's input chain is not policy drop with SSH first ([] when it is)."""
    lines = nft_chain(table_text, "input")
    if not lines:
        return ["there is no input chain (the table is missing or empty)"]
    problems = []
    hooks = [line for line in lines if "hook input" in line]
    if not hooks or "policy drop;" not in hooks[0]:
        problems.append("the input chain's policy is not drop")
    rules = [line for line in lines if not _NOT_A_RULE.match(line)]
    if not rules:
        problems.append("the input chain has no rule")
    elif f"tcp dport {ssh_port} " not in rules[0] or "accept" not in rules[0]:
        problems.append(f"the first rule is not SSH (tcp dport {ssh_port} ... accept): {rules[0]}")
    return problems


def ufw_problems(status_text, ssh_port):
    """Why `ufw status verbose` is not active, deny incoming, SSH first ([] when it is)."""
    problems = []
    if "Status: active" not in status_text:
        problems.append("ufw is not active")
    if "Default: deny (incoming)" not in status_text:
        problems.append("incoming is not denied by default")
    rules = [line for line in status_text.splitlines() if _UFW_RULE.search(line)]
    if not rules:
        problems.append("ufw has no rule")
    elif not re.match(rf"{ssh_port}/tcp +ALLOW IN", rules[0]):
        problems.append(f"the first rule is not SSH ({ssh_port}/tcp ALLOW IN): {rules[0]}")
    return problems
