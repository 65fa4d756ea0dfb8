# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _cuda_toolkit: nvcc's release, an alternative's value and what does not verify."""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.module_utils import _cuda_toolkit as ct

# The shape of nvcc --version (CUDA 12.x): the release is on the "Cuda compilation tools" line.
NVCC = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:23:50_PST_2025
Cuda compilation tools, release 12.8, V12.8.93
Build cuda_12.8.r12.8/compiler.35583870_0
"""
# The shape of update-alternatives --query (dpkg): "Value:" is the current choice.
QUERY = """Name: cuda
Link: /usr/local/cuda
Status: auto
Best: /usr/local/cuda-12.8
Value: /usr/local/cuda-12.8

Alternative: /usr/local/cuda-12.8
Priority: 128
"""
HOME = "/usr/local/cuda-12.8"


def state(**over):
    base = {"nvcc": {"exists": True, "release": "12.8", "error": ""}, "package_version": "12.8.1-1",
            "link": HOME, "python_include": "/usr/include/python3.11", "python_h": True, "python_error": ""}
    base.update(over)
    return base


def check(found, package_version=""):
    return ct.problems(found, "12.8", HOME, "cuda-toolkit-12-8", package_version, "python3.11", "python3.11-dev")


def test_nvcc_release():
    assert ct.nvcc_release(NVCC) == "12.8"
    assert ct.nvcc_release("") == "none"


def test_alternative_value():
    assert ct.alternative_value(0, QUERY) == HOME
    assert ct.alternative_value(2, "update-alternatives: error: no alternatives for cuda") is None


def test_a_good_toolkit_verifies():
    assert check(state()) == []
    assert check(state(), "12.8.1-1") == []


def test_each_problem_is_named():
    found = check(state(nvcc={"exists": False, "release": "none", "error": "nvcc missing"}, link=None,
                        python_h=False, python_error="No module named sysconfig"), "12.8.0-1")
    assert found == [
        "nvcc --version reports release none, not 12.8 (nvcc missing)",
        "cuda-toolkit-12-8 is 12.8.1-1, not 12.8.0-1",
        "/usr/local/cuda points at nothing, not /usr/local/cuda-12.8",
        "Python.h of python3.11 is missing (/usr/include/python3.11/Python.h; No module named sysconfig): "
        "install python3.11-dev",
    ]
