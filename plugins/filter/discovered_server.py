# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: discovered_server
short_description: A host's volta_server block from its volta_gpu fact
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Turns the C(volta_gpu) fact of M(volta.serving.gpu_facts) into the C(volta_server) mapping of the host and a
    YAML block, ready to paste into C(host_vars/<host>.yml) (C(gpu_model), C(gpu_count), C(compute_capability),
    C(nvlink_islands), C(ram_gb)), with the memory per GPU and what the block cannot hold as comments.
  - When C(nvidia-smi) listed no GPU (no driver yet), the block holds what is known (the NVIDIA PCI functions, the
    host memory) and leaves C(gpu_model) to fill in.
  - Used by the playbook C(volta.serving.discover).
options:
  _input:
    description: The C(volta_gpu) fact.
    type: dict
    required: true
  host:
    description: The host's inventory name, named in the block's header.
    type: str
    required: true
  meminfo:
    description:
      - The text of the host's C(/proc/meminfo); its C(MemTotal) gives C(ram_gb).
      - Omitted, C(ram_gb) is left out.
    type: str
  pci_functions:
    description: The number of NVIDIA PCI functions (RV(volta.serving.gpu_facts#module:pci_functions)).
    type: int
  current:
    description:
      - The host's C(volta_server) in the inventory, when it has one; a comment of the block says what differs
        from what was read.
    type: dict
"""

EXAMPLES = r"""
- name: Print the volta_server block
  ansible.builtin.debug:
    msg: "{{ (ansible_facts['volta_gpu'] | volta.serving.discovered_server(inventory_hostname))['block'] }}"
"""

RETURN = r"""
_value:
  description: The host's volta_server and its block.
  type: dict
  contains:
    host:
      description: The host.
      type: str
    read:
      description: Whether nvidia-smi listed the GPUs; V(false) leaves C(gpu_model) to fill in.
      type: bool
    volta_server:
      description: The mapping, as the block writes it.
      type: dict
    notes:
      description: The comments of the block (driver, memory per GPU, what preflight will refuse).
      type: list
      elements: str
    block:
      description: The YAML text, starting with comments and C(volta_server:).
      type: str
"""


def discovered_server(gpu_facts, host, meminfo=None, pci_functions=None, current=None):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load (tests/unit/plugins/filter/test_filter_imports.py).
    from ansible_collections.volta.serving.plugins.plugin_utils._discover import discover

    return discover(host, gpu_facts, meminfo=meminfo, pci_functions=pci_functions, current=current)


class FilterModule:
    """volta.serving.discovered_server."""

    def filters(self):
        return {"discovered_server": discovered_server}
