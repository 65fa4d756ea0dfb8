#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: unit_state
short_description: The state of the engine units of a host, read in one call
description:
  - For each of O(instances), reads whether its engine program exists, whether its unit is active and
    enabled (C(systemctl is-active), C(systemctl is-enabled), one run per unit and verb), which install
    its engine's C(current) link points at, the sha256 of that install's record, and the install the
    instance was last started on (C(<state_dir>/<name>.started)).
  - Reports the instances that run another install than their engine's current one (RV(stale_engine)) and the
    unit files of O(unit_dir) that carry O(marker) (RV(marked_units), the units engine_service installed).
  - Reads only; never changes anything (so it runs in check mode as well).
author:
  - volta.serving contributors (@volta-serving)
options:
  instances:
    description:
      - The enabled instances of the serving plan (RV(volta.serving.serving_plan#module:plan.instances)), as they are.
      - Read from each are C(name), C(unit), C(engine), C(engine_dir) (the engine's C(current) link) and the
        first element of C(argv) (the engine program).
    type: list
    elements: dict
    required: true
  state_dir:
    description: Where the start records are (C(<name>.started)).
    type: path
    required: true
  record:
    description: The file name of an install's record inside the install.
    type: str
    default: .volta-install.json
  unit_dir:
    description: Where the unit files are.
    type: path
    default: /etc/systemd/system
  unit_pattern:
    description: A shell pattern of the unit file names to look in for O(marker).
    type: str
    default: volta-*.service
  groups:
    description: Groups that must exist (the GPU device groups).
    type: list
    elements: str
    default: []
  user:
    description:
      - The service account as engine_service creates it; RV(account_changes) says what differs.
      - Keys C(name), C(group), C(groups), C(home), C(shell), C(comment).
    type: dict
  marker:
    description: The start of the line that marks a unit file as installed by engine_service.
    type: str
    default: "# volta.serving engine_service instance "
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: Reads only.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check mode).
    support: none
"""

EXAMPLES = r"""
- name: Read the units, their engines and their start records
  volta.serving.unit_state:
    instances:
      - {name: command-r, unit: volta-command-r.service, engine: vllm, engine_dir: /opt/volta/engines/vllm/current,
         argv: [/opt/volta/engines/vllm/current/venv/bin/vllm, serve, /srv/models/command-r-32b]}
    state_dir: /var/lib/volta-serving/instances
  register: __engine_service_state
"""

RETURN = r"""
instances:
  description: Per instance name, what was read.
  returned: always
  type: dict
  sample:
    command-r: {program_exists: true, active: active, enabled: enabled, link_exists: true,
                now: "vllm-0.21.0-torch2.11.0-cu126@3f0c...", started: "vllm-0.21.0-torch2.11.0-cu126@3f0c..."}
inactive:
  description: The instances whose unit is not C(active).
  returned: always
  type: list
  elements: str
not_enabled:
  description: The units that are not C(enabled).
  returned: always
  type: list
  elements: str
missing_programs:
  description: The instances whose engine program does not exist (yet).
  returned: always
  type: list
  elements: str
stale_engine:
  description:
    - The instances that run another install than their engine's current one, with C(name), C(engine),
      C(started), C(now), C(previous) and C(install).
  returned: always
  type: list
  elements: dict
account_changes:
  description: What the groups and the service account lack (empty when they are as wanted, or without O(user)).
  returned: always
  type: list
  elements: str
  sample: ["user volta is not in group render"]
marked_units:
  description: The unit file names in O(unit_dir) that carry O(marker).
  returned: always
  type: list
  elements: str
"""

import fnmatch
import grp
import hashlib
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _unit_state

ARGUMENT_SPEC = {
    "instances": {"type": "list", "elements": "dict", "required": True},
    "state_dir": {"type": "path", "required": True},
    "record": {"type": "str", "default": ".volta-install.json"},
    "unit_dir": {"type": "path", "default": "/etc/systemd/system"},
    "unit_pattern": {"type": "str", "default": "volta-*.service"},
    "marker": {"type": "str", "default": "# volta.serving engine_service instance "},
    "groups": {"type": "list", "elements": "str", "default": []},
    "user": {"type": "dict"},
}


def _group(name):
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return None
    return entry.gr_gid, list(entry.gr_mem)


def _user(name):
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {"gid": entry.pw_gid, "home": entry.pw_dir, "shell": entry.pw_shell, "gecos": entry.pw_gecos}


def _text(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _sha256(path):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return ""


def _instance(params, instance, states):
    link = instance["engine_dir"]
    link_exists = os.path.lexists(link)
    now = _unit_state.install_now(os.readlink(link) if os.path.islink(link) else "",
                                  _sha256(os.path.join(link, params["record"])))
    started = (_text(os.path.join(params["state_dir"], f"{instance['name']}.started")) or "").strip()
    state = states[instance["unit"]]
    return {"program_exists": os.path.exists(instance["argv"][0]), "active": state["active"],
            "enabled": state["enabled"], "link_exists": link_exists, "now": now,
            "started": started}


def _marked(params):
    try:
        names = [n for n in os.listdir(params["unit_dir"]) if fnmatch.fnmatch(n, params["unit_pattern"])]
    except FileNotFoundError:
        names = []
    contents = {}
    for name in names:
        path = os.path.join(params["unit_dir"], name)
        if os.path.isfile(path) and not os.path.islink(path):
            contents[name] = _text(path) or ""
    return _unit_state.marked_units(contents, params["marker"])


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    params = module.params
    for instance in params["instances"]:
        lacks = [k for k in ("name", "unit", "engine", "engine_dir", "argv") if not instance.get(k)]
        if lacks:
            module.fail_json(msg=f"instance {instance.get('name', '?')} lacks {', '.join(lacks)}: give the serving "
                                 "plan's instances (volta.serving.serving_plan's plan.instances)")
    units = [i["unit"] for i in params["instances"]]
    states = _unit_state.systemctl_states(module, units, required=True)
    read = {i["name"]: _instance(params, i, states) for i in params["instances"]}
    stale = [e for e in (_unit_state.stale_entry(i, read[i["name"]]["link_exists"], read[i["name"]]["now"],
                                                 read[i["name"]]["started"]) for i in params["instances"]) if e]
    module.exit_json(
        changed=False, instances=read, stale_engine=stale, marked_units=_marked(params),
        account_changes=(_unit_state.account_changes(params["groups"], params["user"], _group, _user)
                         if params["user"] else []),
        inactive=[i["name"] for i in params["instances"] if read[i["name"]]["active"] != "active"],
        not_enabled=[i["unit"] for i in params["instances"] if read[i["name"]]["enabled"] != "enabled"],
        missing_programs=[i["name"] for i in params["instances"] if not read[i["name"]]["program_exists"]],
    )


if __name__ == "__main__":
    main()
