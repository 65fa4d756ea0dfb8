# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: toolkit_settings
short_description: The problem of volta.serving.cuda_toolkit's settings on a host, or ""
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - The operating system (Ubuntu 22.04/24.04, Debian 12), C(cuda_toolkit_version) (major.minor),
    C(cuda_toolkit_package_version) (V("") or a version of that release) and the interpreter (python3.X); one
    message with host, why and fix when any of them is wrong.
  - The same file serves C(volta.serving.toolkit_unavailable) (the packages apt does not offer and the failure
    that names them), C(volta.serving.toolkit_pointing) (the alternatives to point at the release) and
    C(volta.serving.toolkit_verify) (the verify report); plugins/plugin_utils/_toolkit_checks.py.
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The host's C(ansible_facts).
    type: dict
    required: true
  host:
    description: The host's inventory name.
    type: str
    required: true
  version:
    description: C(cuda_toolkit_version).
    type: str
    required: true
  package_version:
    description: C(cuda_toolkit_package_version).
    type: str
    required: true
  python:
    description: The interpreter whose -dev package is installed.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Check the toolkit's settings
  volta.serving.check:
    that: __problem | length == 0
    fail_msg: "{{ __problem }}"
  vars:
    __problem: "{{ ansible_facts | volta.serving.toolkit_settings(inventory_hostname, '12.8', '', 'python3.12') }}"
"""

RETURN = r"""
_value:
  description: The problem, or V("").
  type: str
"""


def toolkit_settings(facts, host, version, package_version, python):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._toolkit_checks import settings_problem

    return settings_problem(facts, host, version, package_version, python)


def toolkit_unavailable(apt, host, package, package_version, build_packages, dev_package, repo_url):
    """{missing, message}: see toolkit_unavailable.yml."""
    from ansible_collections.volta.serving.plugins.plugin_utils._toolkit_checks import unavailable

    return unavailable(apt, host, package, package_version, build_packages, dev_package, repo_url)


def toolkit_pointing(state, home):
    """{wrong, needed}: see toolkit_pointing.yml."""
    from ansible_collections.volta.serving.plugins.plugin_utils._toolkit_checks import pointing

    return pointing(state, home)


def toolkit_verify(now, host, check_mode, version, package, python):
    """{unverifiable, success_msg}: see toolkit_verify.yml."""
    from ansible_collections.volta.serving.plugins.plugin_utils._toolkit_checks import verify_report

    return verify_report(now, host, check_mode, version, package, python)


class FilterModule:
    """volta.serving.toolkit_settings, toolkit_unavailable, toolkit_pointing and toolkit_verify."""

    def filters(self):
        return {"toolkit_settings": toolkit_settings, "toolkit_unavailable": toolkit_unavailable,
                "toolkit_pointing": toolkit_pointing, "toolkit_verify": toolkit_verify}
