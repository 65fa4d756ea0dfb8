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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _cuda_toolkit

ENVIRON = {"LC_ALL": "C"}
INCLUDE = "import sysconfig; print(sysconfig.get_paths()['include'])"


def _run(module, argv):
    try:
        return module.run_command(argv, environ_update=ENVIRON)
    except OSError as exc:
        return 127, "", str(exc)


def _nvcc(module, home):
    nvcc = os.path.join(home, "bin", "nvcc")
    if not os.path.exists(nvcc):
        return {"exists": False, "release": "none", "error": f"{nvcc} does not exist"}
    _rc, out, err = _run(module, [nvcc, "--version"])
    return {"exists": True, "release": _cuda_toolkit.nvcc_release(out), "error": err.strip()}


def _python(module, python):
    binary = module.get_bin_path(python)
    if binary is None:
        return "", f"{python} is not installed"
    rc, out, err = _run(module, [binary, "-c", INCLUDE])
    return (out.strip(), err.strip()) if rc == 0 else ("", err.strip() or f"{python} failed (rc={rc})")


def _read(module):
    p = module.params
    _rc, version, _err = _run(module, ["dpkg-query", "-W", "-f=${Version}", p["package"]])
    alternatives = {}
    for name in p["alternatives"]:
        rc, out, _err = _run(module, ["update-alternatives", "--query", name])
        alternatives[name] = _cuda_toolkit.alternative_value(rc, out)
    include, error = _python(module, p["python"])
    return {
        "nvcc": _nvcc(module, p["home"]),
        "package_version": version.strip(),
        "link": os.path.realpath("/usr/local/cuda") if os.path.islink("/usr/local/cuda") else None,
        "alternatives": alternatives,
        "python_include": include,
        "python_h": bool(include) and os.path.exists(os.path.join(include, "Python.h")),
        "python_error": error,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            home=dict(type="path", required=True),
            version=dict(type="str", required=True),
            package=dict(type="str", required=True),
            package_version=dict(type="str", default=""),
            alternatives=dict(type="list", elements="str", default=[]),
            python=dict(type="str", required=True),
            dev_package=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    state = _read(module)
    state["problems"] = _cuda_toolkit.problems(state, p["version"], p["home"], p["package"], p["package_version"],
                                               p["python"], p["dev_package"])
    module.exit_json(changed=False, **state)


if __name__ == "__main__":
    main()
