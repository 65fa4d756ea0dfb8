# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: driver_verify
short_description: What volta.serving.nvidia_driver's verify step checks and says
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Decides whether there is a GPU to verify (V(check_mode) - the driver is not installed yet, V(no_gpu) - no
    NVIDIA PCI function and nvidia-smi finds no driver, else V(verify)), what does not match (nvidia-smi's
    status, else the GPU count and model of C(volta_server), the driver version, persistence mode) and the
    messages of the check.
  - The same file serves C(volta.serving.driver_settings) (the first problem of the driver's settings) and
    C(volta.serving.driver_drift) (the loaded kernel module against the installed driver);
    plugins/plugin_utils/_driver_checks.py.
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The C(volta_gpu) fact (M(volta.serving.gpu_facts)).
    type: dict
    required: true
  host:
    description: The host's inventory name, for the messages.
    type: str
    required: true
  server:
    description: C(volta_server); V({}) when not set.
    type: dict
    default: {}
  version:
    description: C(nvidia_driver_version).
    type: str
    default: ""
  branch:
    description: C(nvidia_driver_branch).
    type: str
    default: ""
  persistence:
    description: C(nvidia_driver_persistence).
    type: bool
    default: true
  persistence_off:
    description: The indexes of the GPUs with persistence mode off.
    type: list
    default: []
  check_mode:
    description: C(ansible_check_mode).
    type: bool
    default: false
  installed_version:
    description: The upstream version of the installed driver (V("") for none).
    type: str
    default: ""
  has_pci_gpu:
    description: Whether the host has an NVIDIA PCI function.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Verify the GPUs and the driver
  volta.serving.check:
    that: __verify['skip'] or __verify['issues'] | length == 0
    fail_msg: "{{ __verify['fail_msg'] }}"
    success_msg: "{{ __verify['success_msg'] }}"
  vars:
    __verify: "{{ ansible_facts['volta_gpu'] | volta.serving.driver_verify(inventory_hostname, server=volta_server) }}"
"""

RETURN = r"""
_value:
  description: The decision.
  type: dict
  contains:
    mode:
      description: V(verify), V(no_gpu) or V(check_mode).
      type: str
    skip:
      description: Nothing to verify (mode other than V(verify)).
      type: bool
    uvm:
      description: Whether the nvidia-uvm device is checked (GPUs that answer, outside check mode).
      type: bool
    issues:
      description: What does not match, each a sentence.
      type: list
      elements: str
    fail_msg:
      description: The failure (host, issues, fix).
      type: str
    success_msg:
      description: The report, or why verification is skipped.
      type: str
"""


def driver_verify(gpu, host, **options):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._driver_checks import verify

    return verify(gpu, host, **options)


def driver_settings(facts, host, branch, version, plan_problems=()):
    """The first problem of the driver's settings, or "": see driver_settings.yml."""
    from ansible_collections.volta.serving.plugins.plugin_utils._driver_checks import settings_problem

    return settings_problem(facts, host, branch, version, plan_problems)


def driver_drift(installed, main_package, gpu, pci_functions):
    """{installed_version, loaded_version, drift}: see driver_drift.yml."""
    from ansible_collections.volta.serving.plugins.plugin_utils._driver_checks import drift

    return drift(installed, main_package, gpu, pci_functions)


class FilterModule:
    """volta.serving.driver_verify, volta.serving.driver_settings and volta.serving.driver_drift."""

    def filters(self):
        return {"driver_verify": driver_verify, "driver_settings": driver_settings, "driver_drift": driver_drift}
