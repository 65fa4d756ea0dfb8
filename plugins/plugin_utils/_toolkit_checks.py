# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of volta.serving.cuda_toolkit: its settings check, what it says when a package is not
available, which alternatives it points at the release, and its verify report.

Pure Python, no Ansible imports; controller-only. Served by the filters ``volta.serving.toolkit_settings``,
``volta.serving.toolkit_unavailable``, ``volta.serving.toolkit_pointing`` and ``volta.serving.toolkit_verify``
(plugins/filter/toolkit_settings.py).
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._driver_checks import os_supported, os_text

PYTHON_FIX = ("set cuda_toolkit_python to an interpreter this distribution ships, or leave it empty (that of the "
              "distribution: Debian 12 python3.11, Ubuntu 22.04 python3.10, Ubuntu 24.04 python3.12)")


def settings_problem(facts, host, version, package_version, python):
    """The problem of the toolkit's settings on this host, or "": the operating system, cuda_toolkit_version
    (major.minor), cuda_toolkit_package_version ("" or a version of that release) and the interpreter
    (python3.X)."""
    version = str(version)
    package_version = "" if package_version is None else str(package_version)
    python = "" if python is None else str(python)
    ok = (os_supported(facts)
          and re.match(r"^[0-9]+\.[0-9]+$", version) is not None
          and (package_version == "" or re.match("^" + re.escape(version) + r"\.", package_version) is not None)
          and re.match(r"^python3\.[0-9]+$", python) is not None)
    if ok:
        return ""
    return (f"{host}: cannot install CUDA {version} (package version \"{package_version}\", interpreter {python}) "
            f"on {os_text(facts)}. Why: the role supports Ubuntu 22.04/24.04 and Debian 12, cuda_toolkit_version "
            "must be major.minor (12.8), cuda_toolkit_package_version empty or a version of that release "
            "(12.8.1-1), and cuda_toolkit_python a python3.X name. Fix: correct those variables.")


def unavailable(apt, host, package, package_version, build_packages, dev_package, repo_url):
    """{missing, message}: the packages apt does not offer (a toolkit package version no repository has counts
    too) and the failure that names them, what was searched and the fixes."""
    apt = apt if isinstance(apt, dict) else {}
    missing = list(apt.get("missing") or [])
    if package not in missing and not apt.get("version"):
        missing.append(f"{package} {package_version}")
    build = [name for name in missing if name in (build_packages or [])]
    searched = "; ".join(apt.get("repositories") or []) or "no repository (the package lists are empty)"
    reasons = "; ".join(apt.get("reasons") or [])
    refreshed = f", after refreshing the package lists ({reasons})" if apt.get("refreshed") else ""
    fixes = []
    if any(re.match(package, name) for name in missing):
        fixes.append(f"check nvidia_driver_cuda_repo_url ({repo_url}) and cuda_toolkit_version")
    if dev_package in missing:
        fixes.append(PYTHON_FIX)
    if build:
        fixes.append(f"enable the distribution archive that has {', '.join(build)}")
    message = (f"{host}: {' and '.join(missing)} not available. Searched: {searched}{refreshed}. "
               f"Why: no repository apt reads offers {'it' if len(missing) == 1 else 'them'}. "
               f"Fix: {'; '.join(fixes)}.")
    return {"missing": missing, "message": message}


def pointing(state, home):
    """{wrong, needed}: the alternatives that exist and point elsewhere than *home*, once the toolkit is there;
    needed: one of them, or /usr/local/cuda is to be linked (no alternative manages it, and it is not *home*)."""
    state = state if isinstance(state, dict) else {}
    exists = bool((state.get("nvcc") or {}).get("exists"))
    alternatives = state.get("alternatives") or {}
    wrong = [name for name, target in alternatives.items() if target is not None and target != home] if exists else []
    link = exists and "cuda" in alternatives and alternatives["cuda"] is None and state.get("link") != home
    return {"wrong": wrong, "needed": bool(wrong) or link}


def verify_report(now, host, check_mode, version, package, python):
    """{unverifiable, success_msg}: check mode on a host without the toolkit yet has nothing to verify; else
    the report of nvcc, the package, /usr/local/cuda and Python.h."""
    now = now if isinstance(now, dict) else {}
    nvcc = now.get("nvcc") or {}
    if check_mode and not nvcc.get("exists"):
        return {"unverifiable": True,
                "success_msg": f"{host}: check mode: CUDA {version} is not installed yet; verification skipped."}
    return {"unverifiable": False,
            "success_msg": (f"{host}: nvcc {nvcc.get('release')} ({package} {now.get('package_version')}), "
                            f"/usr/local/cuda -> {now.get('link') or 'nothing'}, Python.h of {python} present")}
