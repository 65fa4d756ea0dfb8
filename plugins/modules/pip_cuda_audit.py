#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: pip_cuda_audit
short_description: Audit (and clean) the nvidia-* CUDA wheels of a Python venv against torch's pins
description:
  - Reads a venv through its own interpreter (a small stdlib script using C(importlib.metadata), run with
    O(python)); nothing is imported into the module's own Python.
  - Compares every installed C(nvidia-*) CUDA library wheel with what torch's C(Requires-Dist) wants, followed
    transitively through the installed distributions and the extras they are asked for (a cu130 torch pins
    C(cuda-toolkit[cublas,...]==13.0.2), whose extras pin C(nvidia-cublas==13.1.0.3.*) and the rest).
  - Reports wheels of more than one CUDA major version (C(-cu12) next to C(-cu13)), more than one NCCL
    distribution, versions that differ from the pins, wheels torch does not want, and wanted wheels that are
    missing.
  - With O(state=clean) and findings, uninstalls every C(nvidia-*) CUDA library wheel, reinstalls exactly the
    requirements of torch through which they are wanted from O(torch_index_url) only, audits again and fails
    when anything is still off. A consistent venv is left alone.
author:
  - volta.serving contributors (@volta-serving)
options:
  python:
    description:
      - The venv's interpreter, for example C(/opt/volta/engines/vllm/current/venv/bin/python).
      - An interpreter that is not a venv's (its C(sys.prefix) is its C(sys.base_prefix)) is refused.
    type: path
    required: true
  state:
    description:
      - V(audit) only reads and reports.
      - V(clean) repairs a venv with findings (see the description).
    type: str
    choices: [audit, clean]
    default: audit
  torch_index_url:
    description:
      - The PyTorch index of the venv's CUDA flavour, for example C(https://download.pytorch.org/whl/cu126).
      - Required with O(state=clean); the reinstall uses this index and no other.
    type: str
  distribution:
    description: The distribution whose requirements are the source of truth.
    type: str
    default: torch
  ignore:
    description: C(nvidia-*) distributions to leave out of the audit and the clean.
    type: list
    elements: str
    default: []
  uv:
    description:
      - The C(uv) binary used for the clean.
      - When not set or not executable, C(uv) next to O(python) or on E(PATH) is used if there is one,
        else C(python -m pip).
    type: path
attributes:
  check_mode:
    support: full
    description: With O(state=clean), reports what would be uninstalled and installed and changes nothing.
  diff_mode:
    support: full
    description:
      - The C(nvidia-*) CUDA wheels before and after (predicted in check mode), one C(name==version) a line.
notes:
  - C(nvidia-*) distributions that install no files under C(nvidia/) (C(nvidia-ml-py) installs C(pynvml.py)) are
    not CUDA library wheels and are not audited.
  - Set the cache and proxy of C(uv) or C(pip) with the task's C(environment).
seealso:
  - module: volta.serving.source_patch
"""

EXAMPLES = r"""
- name: Audit the vLLM venv
  volta.serving.pip_cuda_audit:
    python: /opt/volta/engines/vllm/current/venv/bin/python
  register: audit

- name: Show what is off
  ansible.builtin.debug:
    msg: "{{ audit.findings | map(attribute='message') }}"
  when: not audit.consistent

- name: Reinstall exactly torch's CUDA wheels from the cu126 index
  volta.serving.pip_cuda_audit:
    python: /opt/volta/engines/vllm/current/venv/bin/python
    state: clean
    torch_index_url: https://download.pytorch.org/whl/cu126
"""

RETURN = r"""
consistent:
  description: V(true) when there are no findings (after the clean with O(state=clean)).
  type: bool
  returned: always
  sample: true
findings:
  description: What is off (after the clean with O(state=clean)); empty when consistent.
  type: list
  elements: dict
  returned: always
  contains:
    kind:
      description: One of V(mixed_cuda_suffix), V(duplicate_nccl), V(version_mismatch), V(unwanted), V(missing).
      type: str
      sample: duplicate_nccl
    distribution:
      description: The distribution (or a comma-separated list for the venv-wide kinds).
      type: str
      sample: nvidia-nccl-cu12, nvidia-nccl-cu13
    installed:
      description: The installed version(s); V(null) when missing.
      type: str
      sample: nvidia-nccl-cu12 2.27.5, nvidia-nccl-cu13 2.28.9
    wanted:
      description: What torch wants; V(null) for an unwanted wheel.
      type: str
      sample: nvidia-nccl-cu12==2.27.5
    message:
      description: One line for a human.
      type: str
initial_findings:
  description: With O(state=clean), the findings before the clean.
  type: list
  elements: dict
  returned: when state is clean
installed:
  description: The C(nvidia-*) CUDA wheels installed (after the clean), name to version.
  type: dict
  returned: always
  sample: {"nvidia-nccl-cu12": "2.27.5"}
wanted:
  description: What the root distribution wants, name to specifier (empty when unpinned).
  type: dict
  returned: always
  sample: {"nvidia-nccl-cu12": "==2.27.5", "nvidia-cublas": "==13.1.0.3.*"}
root:
  description: The root distribution's name and version; V(null) when it is not installed.
  type: dict
  returned: always
  sample: {"name": "torch", "version": "2.11.0+cu126"}
reinstall:
  description: The root's requirements a clean installs (markers evaluated).
  type: list
  elements: str
  returned: always
  sample: ["nvidia-nccl-cu12==2.27.5"]
uninstalled:
  description: What the clean uninstalled (or would, in check mode).
  type: list
  elements: str
  returned: when state is clean
fingerprint:
  description:
    - What the venv of O(python) (its C(bin) directory's parent) has installed once the module is done, as one
      digest of the names and modification times of its C(*.dist-info) directories; V(null) when it has none.
    - M(volta.serving.engine_installs) returns the same digest for an engine install, so that an audit is run again
      only after the venv changed.
  type: str
  returned: success
commands:
  description: The commands the clean ran (or would run, in check mode).
  type: list
  elements: list
  returned: when state is clean
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._cuda_audit import (
    PROBE,
    AuditError,
    audit,
    clean_commands,
    parse_probe,
    predicted_after,
    probe_failure,
    state_lines,
)
from ansible_collections.volta.serving.plugins.module_utils._venv import fingerprint, venv_of


def _probe(module, python):
    rc, out, err = module.run_command([python, "-I", "-c", PROBE], check_rc=False)
    if rc != 0:
        module.fail_json(msg=probe_failure(python, rc, out, err))
    try:
        return parse_probe(out)
    except AuditError as exc:
        module.fail_json(msg=f"{python}: {exc}")


def _find_uv(module, python):
    if module.params["uv"]:
        if os.access(module.params["uv"], os.X_OK):
            return module.params["uv"]
        module.warn(f"uv {module.params['uv']} is not executable; looking for another")
    beside = os.path.join(os.path.dirname(python), "uv")
    if os.access(beside, os.X_OK):
        return beside
    return module.get_bin_path("uv")


def _audit(module, python):
    try:
        return audit(_probe(module, python), module.params["distribution"], module.params["ignore"])
    except AuditError as exc:
        module.fail_json(msg=f"{python}: {exc}")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path", required=True),
            state=dict(type="str", choices=["audit", "clean"], default="audit"),
            torch_index_url=dict(type="str"),
            distribution=dict(type="str", default="torch"),
            ignore=dict(type="list", elements="str", default=[]),
            uv=dict(type="path"),
        ),
        required_if=[("state", "clean", ("torch_index_url",))],
        supports_check_mode=True,
    )
    python = module.params["python"]
    if not os.access(python, os.X_OK):
        module.fail_json(msg=f"{python} is not an executable interpreter")
    before = _audit(module, python)
    if module.params["state"] == "audit" or before["consistent"]:
        result = dict(changed=False, fingerprint=fingerprint(venv_of(python)), **before)
        if module.params["state"] == "clean":
            result.update(initial_findings=[], uninstalled=[], commands=[])
        module.exit_json(**result)

    if before["root"] is None:
        module.fail_json(msg=before["findings"][0]["message"], **before)
    uv = _find_uv(module, python)
    if not uv:
        rc, _out, _err = module.run_command([python, "-m", "pip", "--version"], check_rc=False)
        if rc != 0:
            module.fail_json(msg=f"cannot clean {python}: no uv found and the venv has no pip", **before)
    uninstall = sorted(before["installed"])
    commands = clean_commands(python, module.params["torch_index_url"], uninstall, before["reinstall"], uv)
    diff = {"before": state_lines(before["installed"]), "before_header": f"{python} (nvidia-* CUDA wheels)",
            "after_header": f"{python} (nvidia-* CUDA wheels)"}
    if module.check_mode:
        diff["after"] = state_lines(predicted_after(before))
        module.exit_json(changed=True, diff=diff, initial_findings=before["findings"], uninstalled=uninstall,
                         commands=commands, fingerprint=fingerprint(venv_of(python)), **before)
    for argv in commands:
        rc, out, err = module.run_command(argv, check_rc=False)
        if rc != 0:
            module.fail_json(msg=f"clean step failed (rc={rc}): {' '.join(argv)}: {(err or out).strip()[-3000:]}",
                             initial_findings=before["findings"], commands=commands)
    after = _audit(module, python)
    diff["after"] = state_lines(after["installed"])
    result = dict(changed=True, diff=diff, initial_findings=before["findings"], uninstalled=uninstall,
                  commands=commands, fingerprint=fingerprint(venv_of(python)), **after)
    if not after["consistent"]:
        module.fail_json(msg="the venv is still inconsistent after the clean: "
                         + "; ".join(f["message"] for f in after["findings"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
