# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: gpu_health_lines
short_description: One short health line per GPU from the volta_gpu fact
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Formats the C(health) section of the C(volta_gpu) fact (M(volta.serving.gpu_facts)) as one line per GPU
    (index, bus id, uncorrectable volatile ECC errors, retired pages single+double bit and PENDING, PCIe
    generation and width current/max, active throttle reasons other than idle, FAILED), then one line per GPU
    that sysfs lists and nvidia-smi lost.
  - A fact without a health section, or with health V(unknown), gives one line saying so.
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The C(volta_gpu) fact.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the GPUs' health
  ansible.builtin.debug:
    msg: "{{ ansible_facts['volta_gpu'] | volta.serving.gpu_health_lines }}"
"""

RETURN = r"""
_value:
  description: >-
    The lines, for example V(GPU 0 00000000:1A:00.0: ECC uncorrected 0, retired 0+0, PCIe Gen3/3 x16/16,
    throttle none).
  type: list
  elements: str
"""


def gpu_health_lines(facts):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load (see plugins/filter/host_refusals.py).
    from ansible_collections.volta.serving.plugins.module_utils._gpu_health import health_lines

    return health_lines(facts)


class FilterModule:
    """volta.serving.gpu_health_lines."""

    def filters(self):
        return {"gpu_health_lines": gpu_health_lines}
