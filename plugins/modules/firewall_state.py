#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: firewall_state
short_description: Read what the firewall role needs to know about a host, in one call
description:
  - Reads, without changing anything, whether another firewall manager of O(others) is active, which of
    O(packages) are not installed, whether O(service) is enabled and active, the live rules (for nftables the
    table O(table), for ufw C(ufw status verbose)), and whether those rules are policy drop (deny incoming) with
    SSH on O(ssh_port) first.
  - With O(ruleset), also compares the file the host loads at boot with the rendered ruleset and returns what
    would change, and its diff with C(--diff). The role writes that file only after a confirmed load.
  - Used by the firewall role so that a host with nothing to do costs one round trip.
author:
  - volta.serving contributors (@volta-serving)
options:
  backend:
    description: The firewall backend.
    type: str
    choices: [nftables, ufw]
    required: true
  table:
    description: The nftables table (family inet) the role owns.
    type: str
    default: volta_firewall
  others:
    description: Other firewall managers (systemd unit names without C(.service)); one active is refused by the role.
    type: list
    elements: str
    default: []
  packages:
    description: The backend's packages.
    type: list
    elements: str
    default: []
  service:
    description: The unit that loads the rules at boot (C(nftables) or C(ufw)).
    type: str
    required: true
  ssh_port:
    description: The SSH port that must be the first rule.
    type: int
    required: true
  ruleset:
    description: The rendered ruleset to compare with the file loaded at boot (owner and group root).
    type: dict
    suboptions:
      path:
        description: The file loaded at boot.
        type: path
        required: true
      content:
        description: The rendered ruleset.
        type: str
        required: true
      mode:
        description: Octal mode as a string.
        type: str
        default: "0755"
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Returns the diff of O(ruleset) when it differs from the file.
    support: full
notes:
  - Runs C(systemctl), C(dpkg-query), and C(nft) or C(ufw) with C(LC_ALL=C). Never reports a change.
"""

EXAMPLES = r"""
- name: Read the firewall's state
  volta.serving.firewall_state:
    backend: nftables
    others: [ufw, firewalld]
    packages: [nftables]
    service: nftables
    ssh_port: 22
    ruleset:
      path: /etc/nftables.conf
      content: "{{ lookup('ansible.builtin.template', 'nftables.conf.j2') }}"
  register: __firewall_state
"""

RETURN = r"""
others_active:
  description: The units of O(others) that are active.
  type: list
  elements: str
  returned: always
  sample: [firewalld]
packages_missing:
  description: The packages of O(packages) that are not installed.
  type: list
  elements: str
  returned: always
service_enabled:
  description: Whether O(service) starts at boot.
  type: bool
  returned: always
service_active:
  description: Whether O(service) is active.
  type: bool
  returned: always
live_present:
  description: For nftables whether the table O(table) is loaded, for ufw whether ufw is active.
  type: bool
  returned: always
live_text:
  description: C(nft list table inet TABLE), or C(ufw status verbose); empty when the tool is missing.
  type: str
  returned: always
live_problems:
  description: Why the live rules are not policy drop (deny incoming) with SSH first; empty when they are.
  type: list
  elements: str
  returned: always
  sample: ["the input chain's policy is not drop"]
ruleset_changes:
  description: What writing O(ruleset) would change (V(created), V(content), C(mode 0644 -> 0755), ...); empty
    when the file is the same or O(ruleset) is not given.
  type: list
  elements: str
  returned: always
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _files, _firewall_state

ARGUMENT_SPEC = {
    "backend": {"type": "str", "choices": ["nftables", "ufw"], "required": True},
    "table": {"type": "str", "default": "volta_firewall"},
    "others": {"type": "list", "elements": "str", "default": []},
    "packages": {"type": "list", "elements": "str", "default": []},
    "service": {"type": "str", "required": True},
    "ssh_port": {"type": "int", "required": True},
    "ruleset": {"type": "dict", "options": {"path": {"type": "path", "required": True},
                                            "content": {"type": "str", "required": True},
                                            "mode": {"type": "str", "default": "0755"}}},
}


def _run(module, argv):
    return module.run_command(argv, environ_update={"LC_ALL": "C"})


def _units(module, p):
    names = p["others"] + [p["service"]]
    rc, out, err = _run(module, ["systemctl", "is-active"] + [f"{name}.service" for name in names])
    if len(out.splitlines()) != len(names):
        module.fail_json(msg=f"could not read whether {', '.join(names)} are active: systemctl is-active said "
                             f"{(out + err).strip()!r} (rc {rc}). Fix: check that systemd runs on this host.")
    active = _firewall_state.active_units(names, out)
    _rc, enabled, _err = _run(module, ["systemctl", "is-enabled", f"{p['service']}.service"])
    return {"others_active": [name for name in p["others"] if name in active],
            "service_active": p["service"] in active, "service_enabled": enabled.strip() == "enabled"}


def _live(module, p):
    if p["backend"] == "nftables":
        nft = module.get_bin_path("nft")
        rc, out, _err = _run(module, [nft, "list", "table", "inet", p["table"]]) if nft else (1, "", "")
        present = rc == 0
        problems = _firewall_state.nft_problems(out, p["ssh_port"]) if present else ["the table is not loaded"]
    else:
        ufw = module.get_bin_path("ufw")
        _rc, out, _err = _run(module, [ufw, "status", "verbose"]) if ufw else (1, "", "")
        present = "Status: active" in out
        problems = _firewall_state.ufw_problems(out, p["ssh_port"])
    return {"live_present": present, "live_text": out if present or p["backend"] == "ufw" else "",
            "live_problems": problems}


def _ruleset(module, want):
    """(changes, diff) of the boot file against the rendered ruleset."""
    want = {"path": want["path"], "content": want["content"].encode("utf-8"), "mode": want["mode"],
            "owner": "root", "group": "root"}
    try:
        st = os.lstat(want["path"])
    except FileNotFoundError:
        st = None
    current = None
    if st is not None and stat.S_ISREG(st.st_mode):
        with open(want["path"], "rb") as fh:
            current = fh.read()
    try:
        changes = _files.file_changes(want, st, current, 0, 0)
    except ValueError as err:
        module.fail_json(msg=f"{err}. Fix: move it away; the firewall role writes that file.")
    return changes, _files.file_diff(want, current, changes)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    result = {"changed": False, **_units(module, p), **_live(module, p), "ruleset_changes": []}
    out = ""
    if p["packages"]:
        _rc, out, _err = _run(module, ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Status}\\n"] + p["packages"])
    result["packages_missing"] = _firewall_state.missing_packages(p["packages"], out)
    if p["ruleset"]:
        result["ruleset_changes"], diff = _ruleset(module, p["ruleset"])
        if diff and module._diff:
            result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
