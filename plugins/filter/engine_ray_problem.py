# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: engine_ray_problem
short_description: Why a Ray pin does not fit an engine install, or an empty string
version_added: 0.3.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks C(engine_ray_version) against the engine's own C(Requires-Dist) entries for ray, when it has one,
    and against the lowest Ray the multi-host path takes (token authentication).
options:
  _input:
    description: The engine's Requires-Dist entries (importlib.metadata.requires).
    type: list
    elements: str
    required: true
  pin:
    description: The Ray version to install.
    type: str
    required: true
  engine:
    description: The engine and its version, named in the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the Ray pin
  ansible.builtin.assert:
    that: (requires | volta.serving.engine_ray_problem('2.54.0', 'vllm 0.21.0')) | length == 0
"""

RETURN = r"""
_value:
  description: The problem (what, why, fix), or an empty string.
  type: str
"""


def engine_ray_problem(requires, pin, engine):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.volta.serving.plugins.plugin_utils._cluster import ray_pin_problem

    return ray_pin_problem(list(requires or []), str(pin), str(engine))


class FilterModule:
    """volta.serving.engine_ray_problem."""

    def filters(self):
        return {"engine_ray_problem": engine_ray_problem}
