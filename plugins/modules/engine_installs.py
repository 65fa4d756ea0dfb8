#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: engine_installs
short_description: Read the engine installs of a host, prune old ones and record them in local facts
description:
  - Reads the engine root that M(volta.serving.engine) installs into (C(ROOT/FLAVOUR/INSTALL/) per install, the
    C(ROOT/FLAVOUR/current) link to the one in service); per flavour, the finished installs (those holding the
    marker file, the install's JSON record) newest first by the marker's modification time, their records, the
    unfinished C(FLAVOUR-*) directories a failed run left, the install in service and the previous one (the
    newest other finished install, the rollback target).
  - With O(installing), plans the pruning of those flavours, keeping the install in service, the one being
    installed and the O(keep) newest others, and removing every unfinished directory; with O(state=present) it
    removes them.
  - Builds the C(volta_engines) local fact (per flavour with a finished install, the install in service, its
    record's versions, patches and audits, the previous install, every finished install and each one's binary
    audit summary) as it is once the pruning is done; with O(state=present) writes it to O(facts_path) when its
    content differs. The fact is returned as C(ansible_facts.ansible_local.volta_engines) (the action plugin
    keeps the other local facts), so no C(setup) run is needed to read it.
  - O(state=read) changes nothing and reports what O(state=present) would do (RV(prune), RV(facts_changed)).
  - With O(packages), also reports which of those distribution packages are not installed (RV(packages_missing)),
    so that the engine role runs apt only when one is missing.
  - With O(audit_record), also reports for each install of O(installing) that is finished what its venv has
    installed now (one digest) and the record of its last NCCL audit (RV(audits)), so that the engine role runs
    M(volta.serving.pip_cuda_audit) again only when the venv changed since.
author:
  - volta.serving contributors (@volta-serving)
options:
  root:
    description:
      - The engine root (C(engine_root) of M(volta.serving.engine)).
      - Left out, the engine role's default path (its C(defaults/main.yml)), filled in on the controller.
    type: path
  marker:
    description: The file that marks a finished install and holds its record.
    type: str
    default: .volta-install.json
  flavours:
    description: Flavours reported in RV(engines) even when they have no directory yet.
    type: list
    elements: str
    default: []
  installing:
    description:
      - Flavour to the name of the install being installed (or kept in service); these flavours are pruned.
    type: dict
    default: {}
  keep:
    description: How many finished installs to keep per pruned flavour besides the one in service and the one installed.
    type: int
    default: 2
  facts_path:
    description: The local facts file (C(/etc/ansible/facts.d/volta_engines.fact)) compared and written; none if unset.
    type: path
  state:
    description: V(read) changes nothing; V(present) prunes and writes the facts file.
    type: str
    choices: [read, present]
    default: read
  probe:
    description: Shell-style path patterns (uv, the interpreters under the root) whose existence RV(probed) reports.
    type: list
    elements: str
    default: []
  packages:
    description:
      - Distribution packages the engines need (interpreters, build tools); RV(packages_missing) names those that
        C(dpkg-query) does not show installed. Left empty, dpkg is not read.
    type: list
    elements: str
    default: []
  audit_record:
    description:
      - The file, inside an install, where the engine role keeps the result of the install's last NCCL audit
        (C(.volta-audit.json)). Left unset, RV(audits) is not returned.
    type: str
attributes:
  check_mode:
    support: full
    description: With O(state=present), reports what would be removed and whether the facts file would change.
  diff_mode:
    support: full
    description: The installs removed (one path a line) and the facts file before and after.
  facts:
    support: full
    description: Returns C(ansible_local.volta_engines) under C(ansible_facts).
seealso:
  - module: volta.serving.pip_cuda_audit
"""

EXAMPLES = r"""
- name: Read the engine installs
  volta.serving.engine_installs:
    root: /opt/volta/engines
    flavours: [vllm]
    installing: {vllm: vllm-0.21.0-torch2.11.0-cu126}
    facts_path: /etc/ansible/facts.d/volta_engines.fact
  register: installs

- name: Prune old installs and record the engines in local facts
  volta.serving.engine_installs:
    root: /opt/volta/engines
    installing: {vllm: vllm-0.21.0-torch2.11.0-cu126}
    keep: 2
    facts_path: /etc/ansible/facts.d/volta_engines.fact
    state: present
"""

RETURN = r"""
engines:
  description: Per flavour directory of the root (and each of O(flavours)).
  returned: always
  type: dict
  contains:
    dir:
      description: C(ROOT/FLAVOUR).
      type: str
      sample: /opt/volta/engines/vllm
    current:
      description: The install the C(current) link names; V(null) when there is no link.
      type: str
      sample: vllm-0.21.0-torch2.11.0-cu126
    previous:
      description: The newest finished install other than the one in service (the rollback target); V(null) if none.
      type: str
      sample: vllm-0.20.0-torch2.11.0-cu126
    finished:
      description: The finished installs, newest first.
      type: list
      elements: str
    records:
      description: The record of each finished install, by name.
      type: dict
    record_sha256:
      description:
        - The sha256 of each finished install's record file, by name (it changes when the engine role rewrites
          the record of a repaired venv).
      type: dict
    unfinished:
      description: Directories C(FLAVOUR-*) without a marker (a failed or interrupted run).
      type: list
      elements: str
prune:
  description: The directories removed (or, with O(state=read) or in check mode, that would be removed).
  returned: always
  type: list
  elements: str
facts_changed:
  description: Whether the facts file differs (was or would be written).
  returned: always
  type: bool
probed:
  description: For each pattern of O(probe), whether a path matches it.
  returned: always
  type: dict
  sample: {"/opt/volta/engines/.tools/uv-0.13.9/bin/uv": true}
audits:
  description:
    - Per flavour of O(installing) whose install is finished, with O(audit_record).
    - C(name), the install; C(fingerprint), the sha256 of the names and modification times of the C(*.dist-info)
      directories of its C(venv) (any install, upgrade or reinstall of a distribution changes it; V(null) without
      a venv); C(recorded), the JSON object in O(audit_record), V({}) when there is none.
  returned: when O(audit_record) is set
  type: dict
  sample: {"vllm": {"name": "vllm-0.21.0-torch2.11.0-cu126", "fingerprint": "3b1f...", "recorded": {}}}
packages_missing:
  description: Those of O(packages) that are not installed (unpacked, half-installed and removed ones count as missing).
  returned: always
  type: list
  elements: str
  sample: [ninja-build]
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._apt import not_installed
from ansible_collections.volta.serving.plugins.module_utils._apt_host import dpkg_rows
from ansible_collections.volta.serving.plugins.module_utils._engine_installs import (
    MARKER,
    InstallsError,
    audits,
    facts,
    probe,
    prune_plan,
    render,
    scan,
    view,
    without,
)


def _read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_facts(module, path, text):
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".volta-engines-", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
    except OSError as exc:
        module.fail_json(msg=f"cannot write the engine facts {path}: {exc}. Run the task as root (become)")
    module.atomic_move(tmp, path)


def _remove(module, paths):
    for path in paths:
        try:
            shutil.rmtree(path)
        except OSError as exc:
            module.fail_json(msg=f"cannot remove the old engine install {path}: {exc}; nothing in service was "
                             "touched. Remove it by hand or fix its permissions", removed_before=path)


def run(module):
    p = module.params
    present = p["state"] == "present"
    if not p["root"]:
        module.fail_json(msg="root: the engine root is not set (the action plugin sets the engine role's default)")
    states = scan(p["root"], p["flavours"], p["marker"])
    doomed = prune_plan(states, p["installing"], p["keep"])
    after = without(states, doomed)
    result = {"engines": {flavour: view(state) for flavour, state in after.items()}, "prune": doomed,
              "facts_changed": False, "probed": probe(p["probe"]), "changed": False,
              "packages_missing": not_installed(dpkg_rows(module), p["packages"]) if p["packages"] else []}
    diff = {"before": "".join(f"{path}\n" for path in doomed), "after": "",
            "before_header": "engine installs pruned", "after_header": "engine installs pruned"}
    diffs = [diff] if doomed else []
    result["volta_engines"] = facts(p["root"], after)
    if p["audit_record"]:
        result["audits"] = audits(states, p["installing"], p["audit_record"])
    if p["facts_path"]:
        text, old = render(result["volta_engines"]), _read_text(p["facts_path"])
        result["facts_changed"] = text != old
        if result["facts_changed"]:
            diffs.append({"before": old or "", "after": text, "before_header": p["facts_path"],
                          "after_header": p["facts_path"]})
    if present:
        result["changed"] = bool(doomed) or result["facts_changed"]
        if not module.check_mode:
            _remove(module, doomed)
            if result["facts_changed"]:
                _write_facts(module, p["facts_path"], text)
        if diffs and module._diff:
            result["diff"] = diffs
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path"),
            marker=dict(type="str", default=MARKER),
            flavours=dict(type="list", elements="str", default=[]),
            installing=dict(type="dict", default={}),
            keep=dict(type="int", default=2),
            facts_path=dict(type="path"),
            state=dict(type="str", choices=["read", "present"], default="read"),
            probe=dict(type="list", elements="str", default=[]),
            packages=dict(type="list", elements="str", default=[]),
            audit_record=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except InstallsError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
