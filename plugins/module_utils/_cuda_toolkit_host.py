# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of reading an installed CUDA toolkit: the commands, run through an AnsibleModule.

Used by volta.serving.cuda_toolkit_state (the toolkit alone) and volta.serving.package_state (option
toolkit: the same read in the call that reads the toolkit's packages). The parsing and the checks are
in _cuda_toolkit.
"""

from __future__ import annotations

import os

from ansible_collections.volta.serving.plugins.module_utils import _cuda_toolkit

ENVIRON = {"LC_ALL": "C"}
INCLUDE = "import sysconfig; print(sysconfig.get_paths()['include'])"

# The options of a toolkit read: cuda_toolkit_state's own, package_state's toolkit suboptions.
SPEC = {
    "home": {"type": "path", "required": True},
    "version": {"type": "str", "required": True},
    "package": {"type": "str", "required": True},
    "package_version": {"type": "str", "default": ""},
    "alternatives": {"type": "list", "elements": "str", "default": []},
    "python": {"type": "str", "required": True},
    "dev_package": {"type": "str", "required": True},
}


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


def read(module, p):
    """The toolkit as it is installed (p: the options of SPEC), with what does not verify in problems."""
    _rc, version, _err = _run(module, ["dpkg-query", "-W", "-f=${Version}", p["package"]])
    alternatives = {}
    for name in p["alternatives"]:
        rc, out, _err = _run(module, ["update-alternatives", "--query", name])
        alternatives[name] = _cuda_toolkit.alternative_value(rc, out)
    include, error = _python(module, p["python"])
    state = {
        "nvcc": _nvcc(module, p["home"]),
        "package_version": version.strip(),
        "link": os.path.realpath("/usr/local/cuda") if os.path.islink("/usr/local/cuda") else None,
        "alternatives": alternatives,
        "python_include": include,
        "python_h": bool(include) and os.path.exists(os.path.join(include, "Python.h")),
        "python_error": error,
    }
    state["problems"] = _cuda_toolkit.problems(state, p["version"], p["home"], p["package"], p["package_version"],
                                               p["python"], p["dev_package"])
    return state
