#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: package_state
short_description: Installed, held, candidate and available versions of packages, and what a target would change
description:
  - One read of apt and dpkg for a set of packages, in one call; refreshes apt's package lists first only when
    they cannot know the packages wanted (the rules of M(volta.serving.apt_lists)).
  - For O(packages) (installed at one version, the first package's) and O(extra) (installed at any version), and
    O(query) (only read), reports the installed version, the candidate and the available versions.
  - With O(hold_patterns), also every installed package whose name matches one of them, or whose source package
    matches O(hold_sources), and which of those are held.
  - RV(changes) says what a run must do so that O(packages) are at the version O(version) picks and O(extra) are
    installed; to install (apt specs), to upgrade, the holds to release before and the packages to hold.
  - Never changes a package; the lists are a cache, so a refresh reports no change (RV(refreshed) says whether
    one ran).
author:
  - volta.serving contributors (@volta-serving)
options:
  packages:
    description: Packages installed at one version, picked by O(version) from the first one's versions.
    type: list
    elements: str
    default: []
  version:
    description:
      - V("") keeps the installed version of the first package of O(packages), else takes its candidate; an
        upstream version (V(580.95.05)) or a Debian version (V(580.95.05-0ubuntu0.24.04.1)) takes the available or
        installed version that matches it. Omitted, O(packages) are only read.
    type: str
  branch:
    description: Only versions of this driver branch count for O(version) (V("") any version).
    type: str
    default: ""
  extra:
    description: Packages installed at any version (kernel headers, build tools, precompiled modules).
    type: list
    elements: str
    default: []
  need:
    description:
      - The packages whose lack of a candidate refreshes the lists (before their repository is set up, a caller
        leaves its packages out). Omitted, those of O(packages) and O(extra).
    type: list
    elements: str
  query:
    description: Packages only read; their lack of a candidate forces no refresh and is not RV(missing).
    type: list
    elements: str
    default: []
  hold_patterns:
    description: Name patterns (shell globs) of the installed packages to report and hold (V([]) none).
    type: list
    elements: str
    default: []
  hold_sources:
    description: Source package patterns whose installed binary packages count as well (Debian's driver).
    type: list
    elements: str
    default: []
  refresh:
    description: Refresh the package lists when they cannot know O(packages) and O(extra); V(false) only reads.
    type: bool
    default: true
  read_sources:
    description:
      - deb822 sources files (C(.sources)) read as well, so that a caller writes one only when RV(read_sources)
        shows it differs.
    type: list
    elements: path
    default: []
  units:
    description:
      - systemd units the packages ship whose state is read as well (C(systemctl is-active), C(is-enabled)), so
        that a caller starts one only when RV(units_down) names it.
    type: list
    elements: str
    default: []
  toolkit:
    description:
      - An installed CUDA toolkit read as well, after the lists, the way M(volta.serving.cuda_toolkit_state) reads
        it (the same options and the same RV(toolkit)), so that a caller that reads the toolkit's packages needs no
        second call. Omitted, no toolkit is read.
    type: dict
    suboptions:
      home:
        description: The directory the toolkit is installed in; its C(bin/nvcc) is asked for its release.
        type: path
        required: true
      version:
        description: The CUDA release C(nvcc --version) must report.
        type: str
        required: true
      package:
        description: The package the toolkit comes in, whose installed version is read.
        type: str
        required: true
      package_version:
        description: The version that package must be at; V("") takes any.
        type: str
        default: ""
      alternatives:
        description: The C(update-alternatives) names read for where they point.
        type: list
        elements: str
        default: []
      python:
        description: The interpreter whose include directory must hold C(Python.h).
        type: str
        required: true
      dev_package:
        description: The package named in the problem when C(Python.h) is missing.
        type: str
        required: true
extends_documentation_fragment:
  - volta.serving.apt_lists
attributes:
  check_mode:
    support: full
    description: Refreshes nothing; RV(reasons) says why a real run would refresh.
  diff_mode:
    support: none
    description: Changes nothing.
notes:
  - Runs C(apt-cache), C(apt-get update) and C(dpkg-query) with C(LC_ALL=C), and C(systemctl) for O(units).
seealso:
  - module: volta.serving.apt_lists
"""

EXAMPLES = r"""
- name: Read the driver packages
  volta.serving.package_state:
    packages: [nvidia-driver-580-server]
    version: ""
    branch: "580"
    extra: ["linux-headers-{{ ansible_facts['kernel'] }}"]
    hold_patterns: ["nvidia-*", "libnvidia-*"]
  register: driver

- name: Install what is missing
  ansible.builtin.apt:
    name: "{{ driver.changes.install }}"
  when: driver.changes.install | length > 0
"""

RETURN = r"""
refreshed:
  description: Whether C(apt-get update) ran.
  type: bool
  returned: always
reasons:
  description: Why the lists were (in check mode, would be) refreshed; empty when they were fresh enough.
  type: list
  elements: str
  returned: always
packages:
  description: Per package apt knows, C(installed), C(candidate) (V(null) for none), C(versions) and C(origins).
  type: dict
  returned: always
missing:
  description: The packages of O(packages) and O(extra) without a candidate.
  type: list
  elements: str
  returned: always
repositories:
  description: The repositories apt's package lists hold (what apt searched).
  type: list
  elements: str
  returned: always
installed:
  description: Installed package -> version, for O(packages), O(extra), O(query) and those of O(hold_patterns).
  type: dict
  returned: always
held:
  description: The held packages of O(hold_patterns), sorted.
  type: list
  elements: str
  returned: always
version:
  description: The version O(version) picks; V("") when none matches.
  type: str
  returned: when O(version) is set
changes:
  description: C(install) (apt specs), C(upgrade) (names), C(release) and C(hold) (names).
  type: dict
  returned: always
apt_sources:
  description: The apt sources files (C(.list), C(.sources)) of the host.
  type: list
  elements: str
  returned: always
lock_waited:
  description: Seconds spent waiting for another apt or dpkg.
  type: int
  returned: always
read_sources:
  description:
    - Per file of O(read_sources), its C(mode) (octal string) and C(paragraphs) (one dict of fields per deb822
      paragraph, comments left out); V(null) for a file that does not exist.
  type: dict
  returned: always
  sample: {/etc/apt/sources.list.d/nvidia-cuda.sources: {mode: "0644", paragraphs: [{Types: deb, Suites: /}]}}
units:
  description: Per unit of O(units), C(active) and C(enabled) as systemctl prints them (V("") when it printed nothing).
  type: dict
  returned: always
  sample: {nginx: {active: active, enabled: enabled}}
units_down:
  description: The units of O(units) that are not both active and enabled, in order.
  type: list
  elements: str
  returned: always
toolkit:
  description:
    - With O(toolkit), the installed toolkit as M(volta.serving.cuda_toolkit_state) returns it; C(nvcc),
      C(package_version), C(link), C(alternatives), C(python_include), C(python_h), C(python_error) and C(problems).
  type: dict
  returned: when O(toolkit) is given
  sample: {nvcc: {exists: true, release: "12.8", error: ""}, package_version: 12.8.1-1, problems: []}
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import (
    _apt,
    _apt_host,
    _cuda_toolkit_host,
    _driver_packages,
    _unit_state,
)


def _holds(module, patterns, sources):
    if not patterns:
        return None
    return _driver_packages.installed(_apt_host.dpkg_rows(module), patterns, sources)


def _read_source(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        return {"mode": f"{stat.S_IMODE(os.stat(path).st_mode):04o}", "paragraphs": _apt.deb822_paragraphs(text)}
    except FileNotFoundError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            version=dict(type="str"),
            branch=dict(type="str", default=""),
            extra=dict(type="list", elements="str", default=[]),
            need=dict(type="list", elements="str"),
            query=dict(type="list", elements="str", default=[]),
            hold_patterns=dict(type="list", elements="str", default=[]),
            hold_sources=dict(type="list", elements="str", default=[]),
            refresh=dict(type="bool", default=True),
            sources_changed=dict(type="bool", default=False),
            cache_valid_time=dict(type="int", default=3600),
            lock_timeout=dict(type="int", default=600),
            units=dict(type="list", elements="str", default=[]),
            read_sources=dict(type="list", elements="path", default=[]),
            toolkit=dict(type="dict", options=dict(_cuda_toolkit_host.SPEC)),
        ),
        supports_check_mode=True,
    )
    p = module.params
    wanted = list(dict.fromkeys(p["packages"] + p["extra"]))
    need = wanted if p["need"] is None else p["need"]
    result = _apt_host.read_lists(module, list(dict.fromkeys(wanted + need + p["query"])), need,
                                  sources_changed=p["sources_changed"], cache_valid_time=p["cache_valid_time"],
                                  lock_timeout=p["lock_timeout"], refresh=p["refresh"])
    holds = _holds(module, p["hold_patterns"], p["hold_sources"])
    installed = {**_apt.installed_versions(result["packages"], wanted + p["query"]),
                 **(holds or {}).get("installed", {})}
    target = None
    if p["version"] is not None and p["packages"]:
        target = _apt.pick_version(result["packages"].get(p["packages"][0]), p["version"], p["branch"])
        result["version"] = target
    result["missing"] = [n for n in wanted if not (result["packages"].get(n) or {}).get("candidate")]
    units = _unit_state.systemctl_states(module, p["units"])
    result.update(
        changed=False, installed=installed, held=(holds or {}).get("held", []),
        changes=_apt.plan_changes(result["packages"], installed, p["packages"], p["extra"], target, holds),
        apt_sources=[s for s in _apt.source_files(_apt.ETC_APT) if s.endswith((".list", ".sources"))],
        units=units, units_down=_unit_state.down(units),
        read_sources={path: _read_source(path) for path in p["read_sources"]},
    )
    if p["toolkit"] is not None:
        result["toolkit"] = _cuda_toolkit_host.read(module, p["toolkit"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
