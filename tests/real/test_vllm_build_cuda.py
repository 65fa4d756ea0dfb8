"""The CUDA toolkit the engine role builds vLLM with keeps sm_70 in the release's real CMakeLists.txt.

vLLM picks the architectures it compiles for from a chain of ``if``/``elseif`` on the nvcc version
(``CUDA_SUPPORTED_ARCHS``) and intersects it with ``TORCH_CUDA_ARCH_LIST``. From 0.20.0 on, 7.0 is
in the list only for nvcc older than 12.8, so the role builds with the CUDA of torch's build (12.6
for cu126) rather than with the 12.8 toolkit (plugin_utils/_engine_build.build_cuda).
"""

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils._engine_build import build_cuda
from artifacts import fetch, member

ROOT = Path(__file__).resolve().parents[2]
_BRANCH = re.compile(r"^\s*(if|elseif|else)\s*\((.*)$")
_GE = re.compile(r"CMAKE_CUDA_COMPILER_VERSION\s+VERSION_GREATER_EQUAL\s+([0-9.]+)")
_SET = re.compile(r'^\s*set\(CUDA_SUPPORTED_ARCHS\s+"([^"]+)"\)')


def _version(text):
    return tuple(int(x) for x in text.split("."))


def supported_archs(cmake, nvcc):
    """The CUDA_SUPPORTED_ARCHS the real CMakeLists.txt sets for *nvcc* (e.g. "12.6")."""
    lines = cmake.splitlines()
    first = next(i for i, line in enumerate(lines) if _SET.match(line))
    start = max(i for i in range(first) if _BRANCH.match(lines[i]) and _BRANCH.match(lines[i]).group(1) == "if")
    branch, taken = None, None
    for line in lines[start:]:
        head = _BRANCH.match(line)
        if head:
            branch = head.group(1)
            condition = ""
        if line.strip().startswith("endif("):
            break
        if branch in ("if", "elseif") and not _SET.match(line):
            condition += line
        found = _SET.match(line)
        if found and taken is None:
            floor = _GE.search(condition or "")
            if branch == "else" or (floor and _version(nvcc) >= _version(floor.group(1))):
                taken = found.group(1).split(";")
    return taken


def _vllm_pins():
    defaults = yaml.safe_load((ROOT / "roles" / "engine" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    return defaults["engine_vllm_version"], defaults["engine_vllm_torch_cuda"]


@pytest.mark.parametrize("version, nvcc, has_70", [
    ("0.19.1", "12.8", True),
    ("0.20.0", "12.8", False),
    ("0.21.0", "12.8", False),
    ("0.21.0", "12.6", True),
    ("0.21.0", "13.0", False),
])
def test_real_cmakelists_keeps_sm70_only_below_12_8(version, nvcc, has_70):
    cmake = member(fetch("vllm", version, kind="sdist"), f"vllm-{version}/CMakeLists.txt").decode()
    assert ("7.0" in supported_archs(cmake, nvcc)) is has_70


def test_the_role_builds_its_default_vllm_with_a_cuda_that_keeps_sm70():
    version, torch_cuda = _vllm_pins()
    cuda, _why = build_cuda("", torch_cuda)
    cmake = member(fetch("vllm", version, kind="sdist"), f"vllm-{version}/CMakeLists.txt").decode()
    assert "7.0" in supported_archs(cmake, cuda), (version, cuda)
