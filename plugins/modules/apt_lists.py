#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_lists
short_description: Refresh apt's package lists when they cannot know the packages wanted, and read their versions
description:
  - Decides whether C(apt-get update) must run, runs it when so, and reports what C(apt-cache policy) then says
    about O(packages).
  - The lists are refreshed when the apt sources changed in this run (O(sources_changed)), when a sources, keyring
    (C(Signed-By), C(trusted.gpg.d)) or preferences file is newer than the lists, when a package of O(packages)
    has no candidate, or when the lists are older than O(cache_valid_time). A cache age alone cannot tell that a
    freshly built image has empty lists, or that a repository was added after the last refresh.
  - C(apt-get update) does not wait for another apt or dpkg (C(DPkg::Lock::Timeout) covers only the dpkg lock of an
    install), so while another process holds the lists lock the module retries, up to O(lock_timeout) seconds,
    and warns how long it waited and for which process.
  - After a refresh the module touches C(/var/lib/apt/periodic/update-success-stamp), the stamp
    M(ansible.builtin.apt) reads for its C(cache_valid_time).
  - The lists are a cache, not configuration, so a refresh reports no change; RV(refreshed) says whether one ran.
  - A package without a candidate is not a failure here; it is listed in RV(missing), so that the role can say
    what is missing, where apt looked (RV(repositories)) and how to fix it.
author:
  - volta.serving contributors (@volta-serving)
options:
  packages:
    description: The packages whose versions are needed. A package without a candidate forces a refresh.
    type: list
    elements: str
    default: []
  version:
    description:
      - Pick a version of the first package of O(packages), returned as RV(version).
      - V("") keeps the installed version, else takes the candidate; an upstream version (V(580.95.05)) or a Debian
        version (V(580.95.05-0ubuntu0.24.04.1)) takes the available or installed version that matches it.
      - Omitted, RV(version) is not returned.
    type: str
  branch:
    description:
      - Only versions of this driver branch count for O(version) (upstream version C(<branch>.*), after any epoch).
        Where one package name spans branches (Debian's C(nvidia-driver-cuda)), V("") then takes the installed
        version of the branch, else the candidate, else the newest version of the branch.
      - V("") any version.
    type: str
    default: ""
extends_documentation_fragment:
  - volta.serving.apt_lists
attributes:
  check_mode:
    support: full
    description: Refreshes nothing; RV(reasons) says why a real run would refresh, and the versions are read from
      the lists as they are.
  diff_mode:
    support: none
    description: The package lists are a cache; there is no file to show.
notes:
  - Runs C(apt-get) and C(apt-cache) with C(LC_ALL=C).
seealso:
  - module: ansible.builtin.apt
"""

EXAMPLES = r"""
- name: Refresh the package lists if they cannot know the driver, and pick its version
  volta.serving.apt_lists:
    packages: [nvidia-driver-580-server]
    version: ""
    sources_changed: "{{ cuda_repo is changed }}"
  register: lists

- name: Fail with where apt looked
  ansible.builtin.fail:
    msg: "{{ lists.missing | join(', ') }} not available from {{ lists.repositories | join(', ') }}"
  when: lists.missing | length > 0
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
  sample: ["apt has no candidate for nvidia-driver-580-server"]
packages:
  description:
    - Per package of O(packages) that apt knows, C(installed) and C(candidate) (V(null) for none), C(versions)
      (the version table, newest first) and C(origins) (the repositories that offer them).
  type: dict
  returned: always
  sample:
    nvidia-driver-580-server:
      installed: null
      candidate: 580.95.05-0ubuntu0.24.04.1
      versions: [580.95.05-0ubuntu0.24.04.1]
      origins: ["http://archive.ubuntu.com/ubuntu noble-updates/restricted amd64 Packages"]
missing:
  description: The packages of O(packages) without a candidate.
  type: list
  elements: str
  returned: always
repositories:
  description: The repositories apt's package lists hold (what apt searched), as C(apt-cache policy) names them.
  type: list
  elements: str
  returned: always
  sample: ["http://archive.ubuntu.com/ubuntu noble/restricted amd64"]
version:
  description: The version picked by O(version); V("") when none matches.
  type: str
  returned: when O(version) is set
lock_waited:
  description: Seconds spent waiting for another apt or dpkg.
  type: int
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _apt, _apt_host


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", default=[]),
            version=dict(type="str"),
            branch=dict(type="str", default=""),
            sources_changed=dict(type="bool", default=False),
            cache_valid_time=dict(type="int", default=3600),
            lock_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, **_apt_host.read_lists(
        module, p["packages"], p["packages"], sources_changed=p["sources_changed"],
        cache_valid_time=p["cache_valid_time"], lock_timeout=p["lock_timeout"]))
    packages = result["packages"]
    if p["version"] is not None and p["packages"]:
        result["version"] = _apt.pick_version(packages.get(p["packages"][0]), p["version"], p["branch"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
