# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What volta.serving.cuda_toolkit reads of an installed toolkit, and what it finds wrong with it.

Pure Python, no Ansible imports. The formats are those of the real tools: ``nvcc --version`` names the
release on its "Cuda compilation tools, release 12.8, V12.8.<build>" line; ``update-alternatives --query
cuda`` prints "Value: /usr/local/cuda-12.8" among its fields.
"""

from __future__ import annotations

import re

_RELEASE_RE = re.compile(r"release ([0-9.]+),")
_VALUE_RE = re.compile(r"^Value: (.*)$", re.MULTILINE)


def nvcc_release(text):
    """The release "nvcc --version" reports (12.8), or "none"."""
    match = _RELEASE_RE.search(text or "")
    return match.group(1) if match else "none"


def alternative_value(rc, text):
    """The path an alternative points at; None when update-alternatives does not manage it (rc != 0)."""
    if rc != 0:
        return None
    match = _VALUE_RE.search(text or "")
    return match.group(1).strip() if match else ""


def problems(state, version, home, package, package_version, python, dev_package):
    """What does not verify, each one line (empty: the toolkit verifies).

    state: the module's result (nvcc, package_version, link, python_include, python_h, python_error).
    """
    found = []
    release = state["nvcc"]["release"]
    if release != str(version):
        found.append(f"nvcc --version reports release {release}, not {version} ({state['nvcc']['error']})")
    if package_version and state["package_version"] != package_version:
        found.append(f"{package} is {state['package_version']}, not {package_version}")
    link = state["link"] or "nothing"
    if link != home:
        found.append(f"/usr/local/cuda points at {link}, not {home}")
    if not state["python_h"]:
        found.append(f"Python.h of {python} is missing ({state['python_include']}/Python.h; "
                     f"{state['python_error']}): install {dev_package}")
    return found
