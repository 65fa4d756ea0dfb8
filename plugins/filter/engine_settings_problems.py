# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: engine_settings_problems
short_description: The refusals of volta.serving.engine's settings, before any change
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Checks the engine role's settings in one call, in this order - every flavour is a known one,
    C(engine_keep) is at least 1, a 1Cat-vLLM host pins C(engine_onecat_sha256), a llama.cpp host
    pins C(engine_llamacpp_ref) and C(engine_llamacpp_source_sha256), and a pinned vLLM source
    archive (C(engine_vllm_source_url)) has its C(engine_vllm_source_sha256).
  - Returns one message per failed check (what is wrong, why, the fix); an empty list when all pass.
options:
  _input:
    description: The engine_* variables by name.
    type: dict
    required: true
  host:
    description: The host the settings are for (its inventory name), named in the messages.
    type: str
    required: true
  flavours:
    description: The flavours this host needs.
    type: list
    elements: str
    required: true
  known:
    description: The flavours the role knows.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Refuse bad engine settings
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ __problems[:1] | join }}"
  vars:
    __problems: >-
      {{ {'engine_keep': engine_keep}
         | volta.serving.engine_settings_problems(host=inventory_hostname, flavours=['vllm'],
                                                  known=['vllm', 'onecat', 'llamacpp']) }}
"""

RETURN = r"""
_value:
  description: The refusal messages, in check order.
  type: list
  elements: str
"""


def engine_settings_problems(settings, host, flavours, known):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._engine_settings import settings_problems

    return settings_problems(dict(settings or {}), str(host), flavours, known)


class FilterModule:
    """volta.serving.engine_settings_problems."""

    def filters(self):
        return {"engine_settings_problems": engine_settings_problems}
