#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_state
short_description: What a role's run must change on a host, read in one call
description:
  - Reads, without changing anything, which of O(packages) are not installed, whether each of O(units) is active
    and enabled, which of O(exists) exist (a link counts), the text of each of O(read), and what
    M(volta.serving.files) would change for each of O(directories) and O(files).
  - A file is compared by its wanted O(files[].content), or by O(files[].sha1), the sha1 of the wanted content,
    so that a secret file's content does not travel to the host for a comparison (its sha1 is never shown).
  - A role reads once, then runs only the tasks whose paths, packages or units need it, so that a host with
    nothing to do costs one round trip.
author:
  - volta.serving contributors (@volta-serving)
options:
  packages:
    description: Packages that must be installed.
    type: list
    elements: str
    default: []
  units:
    description: systemd units (with their suffix, C(nginx.service)).
    type: list
    elements: str
    default: []
  exists:
    description: Paths to look for.
    type: list
    elements: path
    default: []
  read:
    description: Small text files to read (a missing one reads as V(null)).
    type: list
    elements: path
    default: []
  directories:
    description: Directories as for M(volta.serving.files).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      owner:
        description: User name.
        type: str
        default: root
      group:
        description: Group name.
        type: str
        default: root
      mode:
        description: Octal mode as a string.
        type: str
        default: "0755"
  files:
    description: Files as for M(volta.serving.files), each with O(files[].content) or O(files[].sha1).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      content:
        description: The wanted content.
        type: str
      sha1:
        description: The sha1 (hex) of the wanted content, instead of O(files[].content).
        type: str
      owner:
        description: User name.
        type: str
        default: root
      group:
        description: Group name.
        type: str
        default: root
      mode:
        description: Octal mode as a string.
        type: str
        default: "0644"
      state:
        description: V(present) or V(absent).
        type: str
        choices: [present, absent]
        default: present
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: The writes show their diffs (M(volta.serving.files)); this read shows none.
    support: none
notes:
  - Runs C(dpkg-query) and C(systemctl) with C(LC_ALL=C). Never reports a change.
"""

EXAMPLES = r"""
- name: Read what the gateway needs
  volta.serving.host_state:
    packages: [nginx]
    units: [nginx.service]
    exists: [/etc/nginx/sites-enabled/default]
    files:
      - path: /etc/nginx/conf.d/volta-gateway.conf
        content: "{{ lookup('ansible.builtin.template', 'gateway.conf.j2') }}"
      - path: /etc/nginx/volta/keys.conf
        sha1: "{{ lookup('ansible.builtin.template', 'keys.conf.j2') | hash('sha1') }}"
        group: www-data
        mode: "0640"
  register: __api_gateway_state
"""

RETURN = r"""
packages_missing:
  description: The packages of O(packages) that are not installed.
  type: list
  elements: str
  returned: always
units:
  description: Per unit of O(units), C(active) and C(enabled).
  type: dict
  returned: always
  sample: {nginx.service: {active: true, enabled: true}}
existing:
  description: The paths of O(exists) that exist.
  type: list
  elements: str
  returned: always
contents:
  description: Per path of O(read), its text, or V(null) when it is missing.
  type: dict
  returned: always
changed_paths:
  description: The directories and files that M(volta.serving.files) would change, in order.
  type: list
  elements: str
  returned: always
paths:
  description: Per directory and file, what would change (V(created), V(content), C(mode 0600 -> 0644), ...).
  type: dict
  returned: always
"""

import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _files, _host_state
from ansible_collections.volta.serving.plugins.module_utils._firewall_state import missing_packages

_COMMON = {"path": {"type": "path", "required": True}, "owner": {"type": "str", "default": "root"},
           "group": {"type": "str", "default": "root"}}
ARGUMENT_SPEC = {
    "packages": {"type": "list", "elements": "str", "default": []},
    "units": {"type": "list", "elements": "str", "default": []},
    "exists": {"type": "list", "elements": "path", "default": []},
    "read": {"type": "list", "elements": "path", "default": []},
    "directories": {"type": "list", "elements": "dict", "default": [],
                    "options": {**_COMMON, "mode": {"type": "str", "default": "0755"}}},
    "files": {"type": "list", "elements": "dict", "default": [],
              "options": {**_COMMON, "mode": {"type": "str", "default": "0644"}, "content": {"type": "str"},
                          "sha1": {"type": "str", "no_log": True},
                          "state": {"type": "str", "choices": ["present", "absent"], "default": "present"}}},
}


def _run(module, argv):
    return module.run_command(argv, environ_update={"LC_ALL": "C"})


def _id(read, name):
    try:
        return read(name)
    except KeyError:
        return None  # not there yet: every path it owns reads as changing


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _compare(module, kind, want):
    uid = _id(lambda n: pwd.getpwnam(n).pw_uid, want["owner"])
    gid = _id(lambda n: grp.getgrnam(n).gr_gid, want["group"])
    st = _lstat(want["path"])
    try:
        if kind == "directory":
            return _files.directory_changes(want, st, uid, gid)
        current = None
        if st is not None and os.path.isfile(want["path"]) and not os.path.islink(want["path"]):
            with open(want["path"], "rb") as fh:
                current = fh.read()
        return _host_state.file_changes(want, st, current, uid, gid)
    except ValueError as err:
        module.fail_json(msg=f"{err}. Fix: move it away; this role writes that path.")


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    result = {"changed": False, "packages_missing": [], "units": {}}
    if p["packages"]:
        _rc, out, _err = _run(module, ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n"] + p["packages"])
        result["packages_missing"] = missing_packages(p["packages"], out)
    if p["units"]:
        _rc, active, _err = _run(module, ["systemctl", "is-active"] + p["units"])
        # One call per unit: is-enabled prints nothing on stdout for a unit it does not know.
        enabled = "".join((_run(module, ["systemctl", "is-enabled", unit])[1].strip() or "not-found") + "\n"
                          for unit in p["units"])
        result["units"] = _host_state.units(p["units"], active, enabled)
    result["existing"] = [path for path in p["exists"] if os.path.lexists(path)]
    result["contents"] = {path: _read(path) for path in p["read"]}
    paths = {want["path"]: _compare(module, "directory", want) for want in p["directories"]}
    paths.update({want["path"]: _compare(module, "file", want) for want in p["files"]})
    result["paths"] = paths
    result["changed_paths"] = [path for path, changes in paths.items() if changes]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
