# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: host_refusals
short_description: A host's GPUs (nvidia-smi, else volta_server) and the Volta refusals of the driver and toolkit
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - The one home of the GPU source of the host layer, the GPUs of the C(volta_gpu) fact when nvidia-smi listed
    them (status V(ok)), else C(volta_server) (the inventory's description of the host) for all GPUs at once.
  - And of the refusals on GPUs below compute capability 7.5 (Volta and older), each a message (host, what,
    why, fix), V("") when the setting is fine or not given. They refuse a driver branch above 580, the open
    kernel modules, and CUDA 13 or newer. The thresholds are those of the serving-plan rules.
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The C(volta_gpu) fact (M(volta.serving.gpu_facts)); V({}) when not read.
    type: dict
    required: true
  server:
    description: C(volta_server); V({}) when not set.
    type: dict
    default: {}
  host:
    description: The host's inventory name, for the messages.
    type: str
    required: true
  driver_branch:
    description: C(nvidia_driver_branch); omitted, no driver branch refusal.
    type: str
  kernel_module:
    description: C(nvidia_driver_kernel_module) (V(proprietary) or V(open)).
    type: str
  cuda_version:
    description: C(cuda_toolkit_version); omitted, no CUDA refusal.
    type: str
"""

EXAMPLES = r"""
- name: Refuse a driver branch above 580 on Volta GPUs
  ansible.builtin.assert:
    that: __host.refusals.driver_branch | length == 0
    fail_msg: "{{ __host.refusals.driver_branch }}"
  vars:
    __host: >-
      {{ ansible_facts['volta_gpu'] | volta.serving.host_refusals(server=volta_server, host=inventory_hostname,
                                                                  driver_branch=nvidia_driver_branch) }}
"""

RETURN = r"""
_value:
  description: The GPUs and the refusals.
  type: dict
  contains:
    gpus:
      description: Each GPU as C(index), C(name), C(compute_capability) (a string) and C(source).
      type: list
      elements: dict
    source:
      description: V(nvidia-smi), V(volta_server) or V(none).
      type: str
    legacy:
      description: The GPUs below compute capability 7.5.
      type: list
      elements: dict
    first:
      description: The first GPU (placeholders V(-) when there is none), for messages.
      type: dict
    refusals:
      description: C(driver_branch), C(kernel_module) and C(cuda_toolkit), each the message or V("").
      type: dict
"""


def host_refusals(facts, host, server=None, driver_branch=None, kernel_module=None, cuda_version=None):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._host_rules import host_refusals as _host_refusals

    return _host_refusals(facts, server, host, driver_branch=None if driver_branch is None else str(driver_branch),
                          kernel_module=kernel_module,
                          cuda_version=None if cuda_version is None else str(cuda_version))


class FilterModule:
    """volta.serving.host_refusals."""

    def filters(self):
        return {"host_refusals": host_refusals}
