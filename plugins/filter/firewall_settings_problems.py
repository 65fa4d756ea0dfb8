# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: firewall_settings_problems
short_description: The refusals of volta.serving.firewall's settings, before any change
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks the firewall role's settings in one call, in this order - the backend, a non-empty
    C(firewall_ssh_cidrs), every network of C(firewall_ssh_cidrs), C(firewall_api_cidrs) and
    C(firewall_metrics_cidrs) (see P(volta.serving.cidr_split#filter)), the TCP ports of
    C(firewall_ssh_port), C(firewall_extra_tcp_ports) and C(firewall_metrics_tcp_ports), and
    C(firewall_rollback_timeout) at least C(firewall_connect_timeout) + 30 seconds.
  - Returns one message per failed check (host, variable, why, fix); an empty list when all pass.
options:
  _input:
    description: The firewall_* variables by name.
    type: dict
    required: true
  host:
    description: The host the settings are for (its inventory name), named in every message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse bad firewall settings
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems[:1] | join }}"
  vars:
    __problems: >-
      {{ {'firewall_backend': firewall_backend, 'firewall_ssh_cidrs': firewall_ssh_cidrs}
         | volta.serving.firewall_settings_problems(host=inventory_hostname) }}
"""

RETURN = r"""
_value:
  description: The refusal messages, in check order.
  type: list
  elements: str
"""


def firewall_settings_problems(settings, host):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._firewall_settings import settings_problems

    return settings_problems(dict(settings or {}), str(host))


class FilterModule:
    """volta.serving.firewall_settings_problems."""

    def filters(self):
        return {"firewall_settings_problems": firewall_settings_problems}
