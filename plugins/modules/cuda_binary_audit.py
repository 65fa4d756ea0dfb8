#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_binary_audit
short_description: Check that the compiled CUDA extensions of a Python venv can run on this host's GPUs
description:
  - Reads every ELF shared object under a venv's site-packages in pure Python (no C(readelf), no C(cuobjdump),
    nothing imported), for the CUDA libraries it links (C(DT_NEEDED) C(libcudart.so.N), C(libnvrtc.so.N),
    C(libcublas.so.N), ...) and the device code of its CUDA fat binary (the C(.nv_fatbin) section, SASS
    architectures and PTX versions, from the headers only; files are read with seeks, never whole).
  - A file is a problem when it links a CUDA library of another major version than the CUDA torch brings
    (it cannot be loaded next to torch), or when it carries device code but none that runs on the GPU of
    O(compute_capability) (SASS of the same major and a minor at or below the GPU's, or PTX at or below it,
    which the driver compiles at load).
  - Files without a fat binary and without CUDA libraries are fine. The driver (C(libcuda.so.1)) and
    libraries with their own version lines (C(libnccl), C(libcudnn), C(libcurand), ...) are not compared.
  - The verdict is per file; a file passes when any of its code runs on the GPU (real extensions hold
    kernels for newer GPUs only next to kernels for all of them).
author:
  - volta.serving contributors (@volta-serving)
options:
  python:
    description:
      - The venv's interpreter; its site-packages directories are read from C(sysconfig) (purelib and platlib),
        running it isolated (C(-I)).
      - One of O(python) and O(site_packages) is required.
    type: path
  site_packages:
    description: The site-packages directories to audit, instead of asking O(python).
    type: list
    elements: path
  compute_capability:
    description: The GPU's compute capability, for example V(7.0) for a V100 (SM70).
    type: str
    required: true
  torch_cuda:
    description:
      - The CUDA version torch brings, for example V(12.6).
      - Default is the C(cuda) value of C(torch/version.py) in the site-packages (read as text, torch is not
        imported). Without either, CUDA major versions are not compared.
    type: str
  include:
    description:
      - Globs (C(fnmatch), C(*) also matches C(/)) of the files to read, relative to site-packages.
      - Files that are not ELF objects are skipped.
    type: list
    elements: str
    default: ['*.so', '*.so.*']
  optional:
    description:
      - Globs of files loaded only on GPUs they have code for; missing code for this GPU is a note for them,
        not a problem. A CUDA library of the wrong major is a problem for them too.
      - The default names vLLM's FlashAttention and FlashMLA extensions (code for SM80 and newer only; vLLM
        selects them by compute capability) and NVIDIA's CUDA library wheels (C(nvidia/*), matched to the GPU
        through torch's CUDA build; some hold only stub modules for one old SM).
    type: list
    elements: str
    default: ['vllm/vllm_flash_attn/*', 'vllm/_flashmla*', 'nvidia/*']
  require_sass:
    description:
      - Globs of files that must carry SASS for this GPU (same major, minor at or below it); PTX of an older SM,
        which the driver would JIT-compile, is a problem for them.
      - For extensions built on this host for its GPUs, where only PTX means the build left the GPU out (vLLM
        0.20.0 and later compile for 7.0 only with nvcc older than 12.8).
    type: list
    elements: str
    default: []
  fail_on_problems:
    description: Fail with the summary and every problem when there is any.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
notes:
  - Fat-binary layout (container and entry headers) as measured on the real C(vllm/_C.abi3.so) of vLLM 0.21.0 and
    0.19.1 and C(libtorch_cuda.so) of torch 2.11.0. Data that cannot be read is reported in RV(read_errors).
seealso:
  - module: volta.serving.pip_cuda_audit
"""

EXAMPLES = r"""
- name: Check the new vLLM venv's extensions for a V100
  volta.serving.cuda_binary_audit:
    python: /opt/volta/engines/vllm/vllm-0.21.0-cu126/venv/bin/python
    compute_capability: "7.0"
  register: binary_audit

- name: Report only, for one file, with torch's CUDA given
  volta.serving.cuda_binary_audit:
    site_packages: [/opt/venv/lib/python3.12/site-packages]
    compute_capability: "7.0"
    torch_cuda: "12.6"
    include: [vllm/_C.abi3.so]
    fail_on_problems: false

- name: An install built here for the GPU - its own kernels must carry SASS for it
  volta.serving.cuda_binary_audit:
    python: /opt/volta/engines/vllm/vllm-0.21.0-cu126/venv/bin/python
    compute_capability: "7.0"
    require_sass: ["vllm/_C*.so", "vllm/_moe_C*.so"]
"""

RETURN = r"""
ok:
  description: V(true) when no file is a problem.
  type: bool
  returned: always
  sample: false
summary:
  description: One line.
  type: str
  returned: always
  sample: "4 problems: 13 shared objects, 13 with CUDA, checked against sm_70 and torch 2.11.0+cu126"
problems:
  description: One message per problem file.
  type: list
  elements: str
  returned: always
  sample: ["vllm/_C.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code for
    sm_70 (lowest sm_75)"]
files:
  description: How many files were read, and the problem files in detail.
  type: dict
  returned: always
  contains:
    checked:
      description: ELF shared objects read.
      type: int
    cuda:
      description: Those that link CUDA libraries or carry device code.
      type: int
    problem:
      description:
        - Per problem file, C(path) (relative to site-packages), C(cuda_needed) (CUDA soname to the CUDA majors
          that ship it), C(sass) and C(ptx) (for example C(sm_75), C(compute_80)), C(containers) and
          C(containers_without_code) (fat-binary containers, and those with no code for the GPU), C(cuda_ok),
          C(runnable), C(optional), C(errors), C(message).
      type: list
      elements: dict
  sample: {"checked": 13, "cuda": 13, "problem": []}
notes:
  description: Optional files without code for the GPU (not problems).
  type: list
  elements: str
  returned: always
read_errors:
  description: Fat-binary data that could not be read in files that are otherwise fine, one C(<path> - <what>) each.
  type: list
  elements: str
  returned: always
sm:
  description: The GPU's SM, for example C(sm_70).
  type: str
  returned: always
torch_cuda:
  description: The CUDA version torch brings (V(null) when unknown).
  type: str
  returned: always
  sample: "12.6"
torch_version:
  description: torch's version from C(torch/version.py) (V(null) when not found).
  type: str
  returned: always
  sample: 2.11.0+cu126
site_packages:
  description: The directories read.
  type: list
  elements: str
  returned: always
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._binary_audit import (
    DEFAULT_INCLUDE,
    DEFAULT_OPTIONAL,
    SITE_PROBE,
    audit,
    find_files,
    parse_sm,
    read_torch_version,
)


def _site_packages(module):
    if module.params["site_packages"]:
        return module.params["site_packages"]
    python = module.params["python"]
    if not os.access(python, os.X_OK):
        module.fail_json(msg=f"{python} is not an executable interpreter")
    rc, out, err = module.run_command([python, "-I", "-c", SITE_PROBE], check_rc=False)
    if rc != 0:
        module.fail_json(msg=f"{python} could not name its site-packages (rc={rc}): {(err or out).strip()[-2000:]}")
    try:
        dirs = json.loads(out)
    except ValueError:
        dirs = None
    if not isinstance(dirs, list):
        module.fail_json(msg=f"{python} printed no site-packages list: {out[:500]!r}")
    return dirs


def _torch(site_dirs):
    for site in site_dirs:
        path = os.path.join(site, "torch", "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                return read_torch_version(fh.read())
    return None, None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path"),
            site_packages=dict(type="list", elements="path"),
            compute_capability=dict(type="str", required=True),
            torch_cuda=dict(type="str"),
            include=dict(type="list", elements="str", default=list(DEFAULT_INCLUDE)),
            optional=dict(type="list", elements="str", default=list(DEFAULT_OPTIONAL)),
            require_sass=dict(type="list", elements="str", default=[]),
            fail_on_problems=dict(type="bool", default=True),
        ),
        required_one_of=[("python", "site_packages")],
        mutually_exclusive=[("python", "site_packages")],
        supports_check_mode=True,
    )
    site_dirs = [d for d in _site_packages(module) if os.path.isdir(d)]
    if not site_dirs:
        module.fail_json(msg="no site-packages directory to audit was found")
    torch_version, torch_cuda = _torch(site_dirs)
    torch_cuda = module.params["torch_cuda"] or torch_cuda
    try:
        sm = parse_sm(module.params["compute_capability"])
        result = audit(find_files(site_dirs, module.params["include"]), sm, torch_cuda, torch_version,
                       module.params["optional"], module.params["require_sass"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    result.update(changed=False, site_packages=site_dirs)
    if not result["ok"] and module.params["fail_on_problems"]:
        module.fail_json(msg=f"{result['summary']}: {'; '.join(result['problems'])}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
