#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dist_metadata
short_description: Read a Python distribution's core metadata before anything big is downloaded
description:
  - Reads the core metadata (C(Requires-Dist), C(Requires-Python)) of one pinned release, either from a PEP 503
    simple index (O(index_url)) or from a wheel or sdist file (O(src)). Read-only; the same in check mode.
  - From an index, cheapest first, the PEP 658/714 metadata file C(<wheel url>.metadata) of a wheel whose link
    carries C(data-core-metadata) (or C(data-dist-info-metadata)); the same file where the index serves it without
    the attribute; else the sdist is downloaded (tens of MB, never a wheel) and its C(PKG-INFO) read.
  - With O(torch_version), compares the release's own torch requirement (vLLM pins C(torch==X) exactly) with the
    torch the caller installs, and the companions the release pins with O(companions); the disagreements come
    back in RV(problems) (the module does not fail on them).
  - Python standard library and C(ansible.module_utils.urls) only on the managed host.
author:
  - volta.serving contributors (@volta-serving)
options:
  name:
    description: The distribution, for example C(vllm).
    type: str
    required: true
  version:
    description: The pinned release, for example C(0.21.0).
    type: str
    required: true
  index_url:
    description:
      - A PEP 503 simple index, for example C(https://pypi.org/simple); the project page is
        C(<index_url>/<normalised name>/).
      - Exactly one of O(index_url) and O(src).
    type: str
  src:
    description:
      - A wheel (C(.whl)) or sdist (C(.tar.gz), C(.zip)) on the managed host (a path or a C(file://) URL), or an
        C(http(s)) URL that is downloaded (in full) to a temporary file.
      - Exactly one of O(index_url) and O(src).
    type: str
  arch:
    description: The machine whose wheel's metadata to prefer when a release has several. Default the host's.
    type: str
  timeout:
    description: Seconds for each connection and read.
    type: int
    default: 30
  torch_version:
    description: The torch release the caller installs with this distribution; enables RV(problems).
    type: str
  torch_variable:
    description: The name of the variable that sets O(torch_version), used in RV(problems).
    type: str
    default: torch_version
  cuda_variable:
    description: The name of the variable of the torch CUDA tag, used in RV(problems).
    type: str
    default: the CUDA tag
  companions:
    description: "The torch companions installed with it, C({torchvision: 0.26.0}); checked when O(torch_version) is."
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Reads only; does the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
notes:
  - Proxies and CA certificates come from the managed host's environment (C(https_proxy), C(SSL_CERT_FILE)); set
    them with the task's C(environment).
seealso:
  - module: volta.serving.pip_cuda_audit
"""

EXAMPLES = r"""
- name: Read vLLM's metadata from the index
  volta.serving.dist_metadata:
    name: vllm
    version: "0.21.0"
    index_url: https://pypi.org/simple
    torch_version: "2.11.0"
    torch_variable: engine_vllm_torch_version
    cuda_variable: engine_vllm_torch_cuda
  register: meta

- name: Refuse a torch pin the release does not take
  ansible.builtin.assert:
    that: meta.problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ meta.problems | join(' ') }}"

- name: Read a downloaded wheel
  volta.serving.dist_metadata:
    name: 1cat_vllm
    version: "1.5.1"
    src: /var/cache/volta/engines/downloads/1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl
"""

RETURN = r"""
name:
  description: The name the metadata gives.
  type: str
  returned: always
  sample: vllm
version:
  description: The version the metadata gives.
  type: str
  returned: always
  sample: 0.19.1
requires_dist:
  description: Every C(Requires-Dist) line, as written.
  type: list
  elements: str
  returned: always
  sample: ["torch==2.10.0", "torchvision==0.25.0"]
requires_python:
  description: C(Requires-Python), or V(null).
  type: str
  returned: always
  sample: "<3.14,>=3.10"
dynamic:
  description: The C(Dynamic) fields (an sdist's requirements may change when it is built).
  type: list
  elements: str
  returned: always
  sample: [requires-dist]
pins:
  description: The requirements that pin one version exactly and apply unconditionally (canonical name to version).
  type: dict
  returned: always
  sample: {torch: 2.10.0, torchaudio: 2.10.0, torchvision: 0.25.0}
method:
  description: Where the metadata came from, V(pep658), V(pep658-unadvertised), V(sdist), V(file) or V(download).
  type: str
  returned: always
  sample: pep658
metadata_url:
  description: The URL or path the metadata was read from.
  type: str
  returned: always
  sample: https://files.pythonhosted.org/packages/.../vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl.metadata
problems:
  description: What. Why. Fix. messages where the release's torch requirements disagree with O(torch_version).
  type: list
  elements: str
  returned: always
  sample: ["vllm 0.19.1 requires torch==2.10.0 but engine_vllm_torch_version is 2.11.0. Why: ... Fix: ..."]
"""

import platform

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._index import (
    MetadataError,
    check_identity,
    exact_pins,
    from_file,
    from_index,
    torch_problems,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            version=dict(type="str", required=True),
            index_url=dict(type="str"),
            src=dict(type="str"),
            arch=dict(type="str"),
            timeout=dict(type="int", default=30),
            torch_version=dict(type="str"),
            torch_variable=dict(type="str", default="torch_version"),
            cuda_variable=dict(type="str", default="the CUDA tag"),
            companions=dict(type="dict", default={}),
        ),
        mutually_exclusive=[("index_url", "src")],
        required_one_of=[("index_url", "src")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["src"]:
            meta = check_identity(from_file(p["src"], p["timeout"]), p["name"], p["version"], p["src"])
        else:
            meta = from_index(p["index_url"], p["name"], p["version"], p["timeout"], p["arch"] or platform.machine())
    except MetadataError as exc:
        module.fail_json(msg=f"cannot read the metadata of {p['name']} {p['version']}: {exc}")
    problems = []
    if p["torch_version"]:
        companions = {k: str(v) for k, v in (p["companions"] or {}).items()}
        problems = torch_problems(meta, p["torch_version"], p["torch_variable"], p["cuda_variable"], companions)
    module.exit_json(changed=False, pins=exact_pins(meta["requires_dist"]), problems=problems, **meta)


if __name__ == "__main__":
    main()
