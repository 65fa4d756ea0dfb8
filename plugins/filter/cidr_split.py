# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: cidr_split
short_description: Validate source networks and split them into IPv4 and IPv6
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks every entry of a list of networks (CIDR notation, or a single address) with Python's
    C(ipaddress) module and splits the valid ones into IPv4 and IPv6 lists in canonical form,
    without duplicates, in the order given.
  - Never fails; every invalid entry is returned in RV(_value.problems) with why it is refused and
    how to fix it, so that a role can report all of them at once.
  - A network with host bits set (C(10.0.0.5/24)) is refused rather than silently widened or
    narrowed; the fix names both readings.
  - Needs no other collection (C(ansible.utils) is not a dependency of volta.serving).
options:
  _input:
    description:
      - The networks, for example V(["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]).
      - A single string is a list of one; V(null) is an empty list.
    type: list
    elements: raw
    required: true
"""

EXAMPLES = r"""
- name: Refuse invalid SSH networks, listing all of them
  ansible.builtin.assert:
    that: __nets['problems'] | length == 0
    fail_msg: "{{ __nets['problems'] | map(attribute='message') | join(' ') }}"
  vars:
    __nets: "{{ firewall_ssh_cidrs | volta.serving.cidr_split }}"

# ["10.0.0.0/8", "2001:DB8::/32", "192.0.2.7"] | volta.serving.cidr_split
# -> {"ipv4": ["10.0.0.0/8", "192.0.2.7/32"], "ipv6": ["2001:db8::/32"], "problems": []}
"""

RETURN = r"""
_value:
  description: The networks, split, and the entries that were refused.
  type: dict
  contains:
    ipv4:
      description: Valid IPv4 networks, canonical (C(a.b.c.d/len)).
      type: list
      elements: str
    ipv6:
      description: Valid IPv6 networks, canonical (compressed, lower case, C(/len)).
      type: list
      elements: str
    problems:
      description: One entry per refused value.
      type: list
      elements: dict
      contains:
        value:
          description: The value as given.
          type: raw
        why:
          description: Why it was refused.
          type: str
        fix:
          description: What to write instead.
          type: str
        message:
          description: "The problem in one line, ready to print: C(<value>: <why>. Fix: <fix>.)"
          type: str
"""


def cidr_split(values):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs

    return split_cidrs(values)


class FilterModule:
    """volta.serving.cidr_split."""

    def filters(self):
        return {"cidr_split": cidr_split}
