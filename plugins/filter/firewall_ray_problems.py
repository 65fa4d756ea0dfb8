# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: firewall_ray_problems
short_description: The refusals of a host's Ray cluster entry before the firewall opens Ray's ports
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks the serving plan's C(ray) entry of a host (M(volta.serving.serving_plan), C(plan.ray)) before
    volta.serving.firewall opens Ray's TCP ports to the cluster's other members on the cluster interface.
  - Refuses, in this order - an interface name nft and ufw do not accept (1 to 15 letters, digits, C(_),
    C(.), C(:) or C(-)), peers that are missing or not IPv4 host addresses, Ray ports that are not TCP ports
    or ranges, and Ray ports that the firewall also opens to other networks (O(open_ports)).
  - Returns one message per failed check (host, variable, why, fix); an empty list when all pass or the
    entry is V(null) (the host is in no Ray cluster).
options:
  _input:
    description: The plan's C(ray) entry (V(null) outside a Ray cluster).
    type: dict
    required: true
  host:
    description: The host the entry is for (its inventory name), named in every message.
    type: str
    required: true
  open_ports:
    description: The TCP ports the firewall opens to other networks; none may be one of Ray's.
    type: list
    elements: int
    default: []
"""

EXAMPLES = r"""
- name: Check the Ray cluster's interface, member addresses and ports
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems[:1] | join }}"
  vars:
    __problems: >-
      {{ __plan['ray'] | volta.serving.firewall_ray_problems(host=inventory_hostname, open_ports=[8000, 22]) }}
"""

RETURN = r"""
_value:
  description: The refusal messages, in check order.
  type: list
  elements: str
"""


def firewall_ray_problems(ray, host, open_ports=None):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._firewall_ray import ray_problems

    return ray_problems(dict(ray) if ray is not None and hasattr(ray, "keys") else ray, str(host),
                        list(open_ports or []))


class FilterModule:
    """volta.serving.firewall_ray_problems."""

    def filters(self):
        return {"firewall_ray_problems": firewall_ray_problems}
