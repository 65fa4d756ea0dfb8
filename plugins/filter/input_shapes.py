# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: input_shapes
short_description: Check the shape of volta_server, volta_instances and api_gateway_keys
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks that C(volta_server) is a mapping with C(gpu_model), a C(gpu_count) of at least 1,
    C(compute_capability), a non-negative C(ram_gb) and C(nvlink_islands) as lists of GPU indexes; that
    C(volta_instances) is a list of mappings; and that C(api_gateway_keys) is a mapping.
  - Returns one line per problem, naming the host, the variable, what was expected and what was given
    (never the values of C(api_gateway_keys)), so that preflight stops with a readable message instead of
    an argument-spec dump or a filter error deep in a template.
  - Never fails; an empty list means the shapes are right. The fields inside each instance are checked by
    M(volta.serving.serving_plan).
options:
  _input:
    description:
      - The variables as the inventory set them, V(null) for one that is not set.
    type: dict
    required: true
  host:
    description: The host named in the messages (C(inventory_hostname)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop on a variable of the wrong type, one line each
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems | join('\n') }}"
  vars:
    __problems: "{{ {'volta_server': volta_server | default(none), 'volta_instances': volta_instances | default(none),
      'api_gateway_keys': api_gateway_keys | default(none)} | volta.serving.input_shapes(inventory_hostname) }}"

# {'volta_server': {...}, 'volta_instances': 'chat'} | volta.serving.input_shapes('h1')
# -> ["h1: volta_instances: expected a list of instances (mappings with name, engine, model, gpus, port),
#      got the string 'chat'. Fix: write volta_instances as a YAML list, one '- name: ...' mapping per instance."]
"""

RETURN = r"""
_value:
  description: One line per problem; empty when the shapes are right.
  type: list
  elements: str
"""


def input_shapes(variables, host):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._shapes import shape_problems

    return shape_problems(host, dict(variables or {}))


class FilterModule:
    """volta.serving.input_shapes."""

    def filters(self):
        return {"input_shapes": input_shapes}
