# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: driver_installed
short_description: The installed NVIDIA driver packages and their holds, from dpkg-query rows
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Reads rows of C(dpkg-query -W -f='${Package} ${Version} ${db:Status-Want} ${db:Status-Status} ${source:Package}\n')
    and keeps the installed packages that belong to the driver, by name pattern or by source package.
options:
  _input:
    description: The rows (C(stdout_lines)).
    type: list
    elements: str
    required: true
  patterns:
    description: Name patterns (shell globs), from M(volta.serving.driver_packages) C(hold_patterns).
    type: list
    elements: str
    required: true
  sources:
    description: Source package patterns, from C(hold_sources).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Installed driver packages
  ansible.builtin.set_fact:
    __found: "{{ dpkg.stdout_lines | volta.serving.driver_installed(['nvidia-*'], ['*nvidia*']) }}"
"""

RETURN = r"""
_value:
  description: The installed driver packages.
  type: dict
  contains:
    installed:
      description: Package name -> installed version.
      type: dict
    held:
      description: The held ones, sorted.
      type: list
      elements: str
"""


def driver_installed(lines, patterns, sources=()):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.module_utils._driver_packages import installed

    return installed(lines, patterns, sources)


class FilterModule:
    """volta.serving.driver_installed."""

    def filters(self):
        return {"driver_installed": driver_installed}
