# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _toolkit_checks: cuda_toolkit's settings check, unavailable packages, pointing and report."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import toolkit_checks as flt
from ansible_collections.volta.serving.plugins.plugin_utils import _toolkit_checks as tc

NOBLE = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_major_version": "24"}
BOOKWORM = {"distribution": "Debian", "distribution_version": "12.11", "distribution_major_version": "12"}
FOCAL = {"distribution": "Ubuntu", "distribution_version": "20.04", "distribution_major_version": "20"}
SETTINGS_MSG = ('h1: cannot install CUDA {} (package version "{}", interpreter {}) on {}. Why: the role supports '
                "Ubuntu 22.04/24.04 and Debian 12, cuda_toolkit_version must be major.minor (12.8), "
                "cuda_toolkit_package_version empty or a version of that release (12.8.1-1), and "
                "cuda_toolkit_python a python3.X name. Fix: correct those variables.")


@pytest.mark.parametrize(("facts", "version", "package_version", "python", "bad"), [
    (NOBLE, "12.8", "", "python3.12", False),
    (BOOKWORM, 12.8, "12.8.1-1", "python3.11", False),
    (FOCAL, "12.8", "", "python3.8", True),
    (NOBLE, "12", "", "python3.12", True),
    (NOBLE, "12.8.1", "", "python3.12", True),
    (NOBLE, "12.8", "12.9.0-1", "python3.12", True),
    # the release is matched literally (12.8 is not 1298)
    (NOBLE, "12.8", "1298.0-1", "python3.12", True),
    (NOBLE, "12.8", "", "python3", True),
    (NOBLE, "12.8", "", "pypy3.10", True),
])
def test_settings_problem(facts, version, package_version, python, bad):
    expected = SETTINGS_MSG.format(version, package_version, python,
                                   f"{facts['distribution']} {facts['distribution_version']}") if bad else ""
    assert tc.settings_problem(facts, "h1", version, package_version, python) == expected
    assert flt.toolkit_settings(facts, "h1", version, package_version, python) == expected


PKG, DEV, URL = "cuda-toolkit-12-8", "python3.12-dev", "http://repo/cuda/"
FOUND = {"missing": [], "version": "12.8.1-1", "repositories": ["http://repo/cuda/ ./"], "reasons": [],
         "refreshed": False}


@pytest.mark.parametrize(("apt", "package_version", "missing", "message"), [
    (FOUND, "", [], None),
    # the toolkit package unknown, after a refresh
    ({**FOUND, "missing": [PKG], "version": "", "refreshed": True, "reasons": ["no candidate"]}, "", [PKG],
     f"h1: {PKG} not available. Searched: http://repo/cuda/ ./, after refreshing the package lists (no candidate). "
     f"Why: no repository apt reads offers it. Fix: check nvidia_driver_cuda_repo_url ({URL}) and "
     "cuda_toolkit_version."),
    # a version no repository has counts as missing
    ({**FOUND, "version": ""}, "12.8.9-1", [f"{PKG} 12.8.9-1"],
     f"h1: {PKG} 12.8.9-1 not available. Searched: http://repo/cuda/ ./. Why: no repository apt reads offers it. "
     f"Fix: check nvidia_driver_cuda_repo_url ({URL}) and cuda_toolkit_version."),
    # the -dev package and a build tool, no lists at all
    ({**FOUND, "missing": [DEV, "ninja-build"], "repositories": []}, "", [DEV, "ninja-build"],
     f"h1: {DEV} and ninja-build not available. Searched: no repository (the package lists are empty). "
     f"Why: no repository apt reads offers them. Fix: {tc.PYTHON_FIX}; enable the distribution archive that has "
     "ninja-build."),
])
def test_unavailable(apt, package_version, missing, message):
    args = (apt, "h1", PKG, package_version, ["build-essential", "ninja-build"], DEV, URL)
    result = tc.unavailable(*args)
    assert result == flt.toolkit_unavailable(*args)
    assert result["missing"] == missing
    if message is not None:
        assert result["message"] == message


HOME = "/usr/local/cuda-12.8"


@pytest.mark.parametrize(("state", "wrong", "needed"), [
    ({"nvcc": {"exists": True}, "alternatives": {"cuda": HOME, "cuda-12": HOME}, "link": HOME}, [], False),
    ({"nvcc": {"exists": True}, "alternatives": {"cuda": "/usr/local/cuda-12.9", "cuda-12": HOME}, "link": HOME},
     ["cuda"], True),
    ({"nvcc": {"exists": True}, "alternatives": {"cuda": "/x", "cuda-12": "/y"}, "link": "/x"},
     ["cuda", "cuda-12"], True),
    # no alternative manages /usr/local/cuda: the link is pointed
    ({"nvcc": {"exists": True}, "alternatives": {"cuda": None, "cuda-12": None}, "link": None}, [], True),
    ({"nvcc": {"exists": True}, "alternatives": {"cuda": None, "cuda-12": None}, "link": HOME}, [], False),
    # no toolkit yet: nothing to point
    ({"nvcc": {"exists": False}, "alternatives": {"cuda": "/x"}, "link": None}, [], False),
    (None, [], False),
])
def test_pointing(state, wrong, needed):
    assert tc.pointing(state, HOME) == {"wrong": wrong, "needed": needed}
    assert flt.toolkit_pointing(state, HOME) == {"wrong": wrong, "needed": needed}


NOW = {"nvcc": {"exists": True, "release": "12.8"}, "package_version": "12.8.1-1", "link": HOME}


@pytest.mark.parametrize(("now", "check_mode", "expected"), [
    (NOW, False, (False, f"h1: nvcc 12.8 ({PKG} 12.8.1-1), /usr/local/cuda -> {HOME}, Python.h of python3.12 present")),
    ({**NOW, "link": None}, True,
     (False, f"h1: nvcc 12.8 ({PKG} 12.8.1-1), /usr/local/cuda -> nothing, Python.h of python3.12 present")),
    ({"nvcc": {"exists": False}}, True,
     (True, "h1: check mode: CUDA 12.8 is not installed yet; verification skipped.")),
])
def test_verify_report(now, check_mode, expected):
    result = tc.verify_report(now, "h1", check_mode, "12.8", PKG, "python3.12")
    assert result == flt.toolkit_verify(now, "h1", check_mode, "12.8", PKG, "python3.12")
    assert (result["unverifiable"], result["success_msg"]) == expected
