#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_toolkit_state
short_description: Read an installed CUDA toolkit in one call, and say what does not verify
description:
  - Reads what volta.serving.cuda_toolkit configures and verifies; C(nvcc --version) of O(home), the installed
    version of O(package), where C(/usr/local/cuda) points, the C(/usr/local/cuda) alternatives of O(alternatives),
    and the include directory and C(Python.h) of the interpreter O(python).
  - RV(problems) lists what does not verify against O(version) and O(package_version).
  - Read-only; never changes the host.
author:
  - volta.serving contributors (@volta-serving)
options:
  home:
    description: The toolkit's directory (V(/usr/local/cuda-12.8)).
    type: path
    required: true
  version:
    description: The release nvcc must report (V(12.8)).
    type: str
    required: true
  package:
    description: The toolkit package (V(cuda-toolkit-12-8)).
    type: str
    required: true
  package_version:
    description: The package version it must have; V("") any.
    type: str
    default: ""
  alternatives:
    description: The alternatives to read (V(cuda), V(cuda-12)).
    type: list
    elements: str
    default: []
  python:
    description: The interpreter whose C(Python.h) engines compile against (V(python3.11)).
    type: str
    required: true
  dev_package:
    description: The package that provides its C(Python.h), for the message.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Only reads; runs the same way in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
"""

EXAMPLES = r"""
- name: Read the installed toolkit
  volta.serving.cuda_toolkit_state:
    home: /usr/local/cuda-12.8
    version: "12.8"
    package: cuda-toolkit-12-8
    alternatives: [cuda, cuda-12]
    python: python3.11
    dev_package: python3.11-dev
  register: toolkit
"""

RETURN = r"""
nvcc:
  description: C(exists), C(release) (V(none) when unreadable) and C(error) (what nvcc printed on stderr).
  type: dict
  returned: always
package_version:
  description: The installed version of O(package); V("") when not installed.
  type: str
  returned: always
link:
  description: Where C(/usr/local/cuda) points in the end (links resolved); V(null) when it is not a link.
  type: str
  returned: always
alternatives:
  description: Per alternative of O(alternatives), the path it points at; V(null) when update-alternatives does
    not manage it.
  type: dict
  returned: always
python_include:
  description: The include directory of O(python) (V("") when it could not be asked).
  type: str
  returned: always
python_h:
  description: Whether C(Python.h) is there.
  type: bool
  returned: always
python_error:
  description: What O(python) printed on stderr.
  type: str
  returned: always
problems:
  description: What does not verify, one line each.
  type: list
  elements: str
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _cuda_toolkit_host


def main():
    module = AnsibleModule(argument_spec=_cuda_toolkit_host.SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **_cuda_toolkit_host.read(module, module.params))


if __name__ == "__main__":
    main()
