# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: driver_packages
short_description: The NVIDIA driver's package names for one host (install, hold, pin)
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Returns what volta.serving.nvidia_driver installs, holds and pins for a distribution, branch, package set,
    kernel module flavour and kernel module source.
  - Debian (NVIDIA's debian12 repository) names the driver the Debian way (C(nvidia-driver-cuda),
    C(nvidia-kernel-dkms), C(libcuda1), C(firmware-nvidia-gsp), ...; no branch in the names); Ubuntu uses
    C(nvidia-*-<branch>-server) and, for precompiled modules, C(linux-modules-nvidia-<branch>-server-*).
  - Never fails; combinations that cannot work are returned in RV(_value.problems).
options:
  _input:
    description: The distribution as C(ansible_facts['distribution']) names it (V(Ubuntu), V(Debian)).
    type: str
    required: true
  branch:
    description: Driver branch (V(580)).
    type: str
    required: true
  headless:
    description: Compute-only packages (no X11/GL).
    type: bool
    default: false
  kernel_module:
    description: V(proprietary) or V(open).
    type: str
    default: proprietary
  source:
    description: V(ubuntu) (the Ubuntu archive) or V(cuda) (NVIDIA's repository).
    type: str
    default: ubuntu
  module_source:
    description: V(dkms) or V(precompiled) (Canonical's signed modules, Ubuntu only).
    type: str
    default: dkms
  kernel_release:
    description: The running kernel (C(uname -r)); names the precompiled module package.
    type: str
    default: ""
  flavour:
    description: Kernel flavour of the precompiled module metapackage (V(generic), V(generic-hwe-24.04)); V("") none.
    type: str
    default: generic
"""

EXAMPLES = r"""
- name: The driver packages of this host
  ansible.builtin.set_fact:
    __plan: "{{ ansible_facts['distribution'] | volta.serving.driver_packages(branch='580', headless=true) }}"
# Debian -> packages [nvidia-driver-cuda, nvidia-kernel-dkms], main_package nvidia-driver-cuda,
#           pin_packages "src:*nvidia*:any src:cuda-drivers:any"
"""

RETURN = r"""
_value:
  description: The plan.
  type: dict
  contains:
    naming:
      description: V(debian) or V(ubuntu).
      type: str
    packages:
      description: The driver packages to install at the driver version.
      type: list
      elements: str
    main_package:
      description: The package whose version is the installed driver.
      type: str
    module_packages:
      description: Precompiled kernel module packages (kernel-versioned, installed without a version).
      type: list
      elements: str
    needs_dkms:
      description: Whether the module is built with DKMS (kernel headers, Secure Boot signing key).
      type: bool
    hold_patterns:
      description: dpkg-query name patterns of the packages to hold.
      type: list
      elements: str
    hold_sources:
      description: Source package patterns whose binary packages are held too (Debian).
      type: list
      elements: str
    blacklist_regexes:
      description: unattended-upgrades Package-Blacklist entries.
      type: list
      elements: str
    pin_packages:
      description: The C(Package:) line of the apt preference.
      type: str
    problems:
      description: Why this combination cannot work, each with its fix.
      type: list
      elements: str
"""


def driver_packages(distribution, branch, headless=False, kernel_module="proprietary", source="ubuntu",
                    module_source="dkms", kernel_release="", flavour="generic"):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.module_utils._driver_packages import plan

    return plan(distribution, branch, headless=bool(headless), kernel_module=kernel_module, source=source,
                module_source=module_source, kernel_release=kernel_release, flavour=flavour)


class FilterModule:
    """volta.serving.driver_packages."""

    def filters(self):
        return {"driver_packages": driver_packages}
