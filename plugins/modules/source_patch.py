#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: source_patch
short_description: Apply or remove a known source patch in an engine's site-packages
description:
  - Applies one patch of the volta.serving patch catalog to the file it targets, idempotently.
  - Each catalog entry names its target file (inside the engine's site-packages), the distributions and
    versions it may be applied to, the shape the file must have, and how to tell the unpatched, already-patched
    and fixed-upstream shapes apart at each patch site.
  - A file that already has the upstream fix is reported (RV(result=fixed_upstream)) and left alone, and so is
    a file that never had the problem the patch fixes (RV(result=not_needed)).
  - A patch finds exactly one patch site in each place its shape names (for example every Triton MoE kernel
    of the file); any other count fails the task and names the sites found.
  - A file of any other shape, or an engine version outside the patch's range, fails the task with the file,
    the engine version and the patch name, and the file is not touched.
  - The new text is written to a temporary file next to the target and moved over it, so the file is never
    half edited; a file that cannot be read as UTF-8 text or cannot be written fails the task naming it.
  - O(state=absent) removes exactly the lines the patch inserted.
  - Catalog
    (V(fused_moe_int64_offsets)) casts C(offs_token) to C(tl.int64) in the Triton fused MoE kernels of
    C(vllm/model_executor/layers/fused_moe/fused_moe.py) (int32 overflow of C(stride * offset); fixed upstream in
    vLLM PR 34507, so vLLM 0.6.4 to 0.16.0 and 1Cat-vLLM before 1.2.0 are patched, later releases are
    V(fixed_upstream)).
  - Catalog (V(fused_moe_sm70_block_k)) caps the fp16/bf16 default C(BLOCK_SIZE_K) of the same file's
    C(get_default_config) at O(block_k) on SM70 GPUs (vLLM issue 47019); the environment variable
    C(VOLTA_SERVING_MOE_BLOCK_K_SM70) of the serving process overrides it (V(0) turns the cap off). vLLM 0.17.0
    and later are patched; earlier releases never pick a C(BLOCK_SIZE_K) of 128 (V(not_needed)); 1Cat-vLLM's own
    SM70 branch is V(fixed_upstream).
author:
  - volta.serving contributors (@volta-serving)
options:
  name:
    description: The patch.
    type: str
    required: true
    choices: [fused_moe_int64_offsets, fused_moe_sm70_block_k]
  path:
    description:
      - The file to patch.
      - Defaults to the patch's target inside the site-packages of O(python)'s venv (the current engine).
    type: path
  state:
    description: V(present) applies the patch, V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
  python:
    description:
      - The engine venv's interpreter, used to find the target and the version of the distribution that owns it.
    type: path
    default: /opt/volta/engines/vllm/current/venv/bin/python
  engine_version:
    description:
      - The engine version to check the patch's version range against, when O(path) is not a file of
        O(python)'s venv. Without it (and without the venv), the patch is applied on the file's shape alone.
    type: str
  block_k:
    description: The cap of V(fused_moe_sm70_block_k); a power of two of at least 16 (a Triton K tile).
    type: int
    default: 64
attributes:
  check_mode:
    support: full
    description: Reports the result the run would have and changes nothing.
  diff_mode:
    support: full
    description: The file before and after.
seealso:
  - module: volta.serving.pip_cuda_audit
"""

EXAMPLES = r"""
- name: Cast the MoE token offsets to int64 in the current vLLM
  volta.serving.source_patch:
    name: fused_moe_int64_offsets
  register: int64

- name: Cap BLOCK_SIZE_K at 64 on SM70 in a new install that is not in service yet
  volta.serving.source_patch:
    name: fused_moe_sm70_block_k
    python: /opt/volta/engines/vllm/vllm-0.21.0-torch2.11.0-cu126/venv/bin/python

- name: Remove it again
  volta.serving.source_patch:
    name: fused_moe_sm70_block_k
    state: absent
"""

RETURN = r"""
result:
  description:
    - With O(state=present) V(patched) (changed), V(already_patched), V(fixed_upstream) or V(not_needed).
    - With O(state=absent) V(removed) (changed), V(already_absent), V(fixed_upstream) or V(not_needed).
  type: str
  returned: success
  sample: patched
path:
  description: The file.
  type: str
  returned: success
  sample: /opt/volta/engines/vllm/current/venv/lib/python3.12/site-packages/vllm/.../fused_moe.py
distribution:
  description: The distribution that owns the file; V(null) when unknown.
  type: str
  returned: success
  sample: vllm
version:
  description: Its version (or O(engine_version)); V(null) when unknown.
  type: str
  returned: success
  sample: 0.21.0
sites:
  description: Line numbers (1-based, before the change) of the patch sites.
  type: list
  elements: int
  returned: success
  sample: [47]
message:
  description: One line for a human.
  type: str
  returned: always
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._source_patch import (
    CATALOG,
    LOCATE,
    PatchError,
    plan,
)


def _locate(module, python, target):
    if not os.access(python, os.X_OK):
        return None
    rc, out, err = module.run_command([python, "-I", "-c", LOCATE, target], check_rc=False)
    if rc != 0:
        module.fail_json(msg=f"{python} could not look up {target} (rc={rc}): {(err or out).strip()[-2000:]}")
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg=f"{python} printed no JSON while looking up {target}: {out[:500]!r}")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True, choices=sorted(CATALOG)),
            path=dict(type="path"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            python=dict(type="path", default="/opt/volta/engines/vllm/current/venv/bin/python"),
            engine_version=dict(type="str"),
            block_k=dict(type="int", default=64),
        ),
        supports_check_mode=True,
    )
    p = module.params
    patch = CATALOG[p["name"]]
    found = _locate(module, p["python"], patch["target"])
    path, dist, version = p["path"], None, p["engine_version"]
    if found and found.get("path"):
        if path is None or os.path.realpath(path) == found["path"]:
            path = path or found["path"]
            dist, version = found["dist"], version or found["version"]
    if path is None:
        where = f"the venv of {p['python']}" if found else f"{p['python']} (no such interpreter)"
        module.fail_json(msg=f"patch {p['name']}: {patch['target']} is not installed in {where}; "
                         "set path to patch a file directly")
    what = f"{dist or 'engine'} {version or 'unknown'}"
    try:
        with open(path, encoding="utf-8", newline="") as handle:  # line endings kept as they are
            text = handle.read()
    except OSError as exc:
        module.fail_json(msg=f"patch {p['name']}: cannot read {path} ({what}): {exc}")
    except UnicodeDecodeError as exc:
        module.fail_json(msg=f"patch {p['name']}: {path} ({what}) is not UTF-8 text (byte {exc.start}: "
                         f"{exc.reason}), so it is not the Python file {patch['target']}; point path at that file")
    try:
        out = plan(p["name"], text, p["state"], {"block_k": p["block_k"]}, dist, version, path)
    except PatchError as exc:
        module.fail_json(msg=str(exc), path=path, distribution=dist, version=version)
    result = dict(changed=out["changed"], result=out["result"], path=path, distribution=dist, version=version,
                  sites=out["sites"], message=out["message"])
    if out["changed"]:
        result["diff"] = {"before": text, "after": out["text"], "before_header": path, "after_header": path}
        if not module.check_mode:
            _write(module, path, out["text"], f"patch {p['name']}: cannot write {path} ({what})")
    module.exit_json(**result)


def _write(module, path, text, context):
    """Write *text* to a temporary file next to *path* and move it over *path*; fail naming *context*."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".volta-patch-", dir=os.path.dirname(path))
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except OSError as exc:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        module.fail_json(msg=f"{context}: {exc}; the file is unchanged. Run the task as the owner of the engine's "
                         "venv (become) and check that its file system is writable and not full")
    try:
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


if __name__ == "__main__":
    main()
