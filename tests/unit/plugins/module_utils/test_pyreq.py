# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the PEP 440 / PEP 508 subset in _pyreq."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.module_utils._pyreq import (
    RequirementError,
    Version,
    canonical_name,
    evaluate_marker,
    format_requirement,
    parse_requirement,
    specifier_contains,
)

LINUX = {
    "os_name": "posix", "sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux",
    "platform_python_implementation": "CPython", "platform_release": "6.8.0-45-generic", "platform_version": "#1",
    "python_version": "3.12", "python_full_version": "3.12.3", "implementation_name": "cpython",
    "implementation_version": "3.12.3",
}


@pytest.mark.parametrize(
    "spec, version, expected",
    [
        ("==2.27.5", "2.27.5", True),
        ("==2.27.5", "2.28.9", False),
        ("==2.11.0", "2.11.0+cu126", True),  # no local label in the specifier: ignore the candidate's
        ("==2.11.0+cu126", "2.11.0+cu128", False),
        ("==2.11.0+cu126", "2.11.0+cu126", True),
        ("==13.1.0.3.*", "13.1.0.3", True),
        ("==13.1.0.3.*", "13.1.0.30", False),
        ("==12.0.0.61.*", "12.0.0.61.post1", True),
        ("!=1.2.*", "1.3", True),
        (">=13.0.88,<14", "13.0.88", True),
        (">=13.0.88,<14", "14.0", False),
        (">=13.0.88,<14", "13.0.87", False),
        ("<82", "81.0.0", True),
        ("<2.0", "2.0rc1", False),
        ("<2.0", "1.9", True),
        (">2.0", "2.0.post1", False),
        ("~=2.2", "2.9", True),
        ("~=2.2", "3.0", False),
        ("~=1.4.5", "1.4.9", True),
        ("~=1.4.5", "1.5.0", False),
        ("", "0.0.1", True),
        (">=1.0a1", "1.0", True),
        ("===1.0", "1.0", True),
        ("==1.0", "1.0.0", True),
        ("<=1.0.dev1", "1.0a1", False),
    ],
)
def test_specifier_contains(spec, version, expected):
    assert specifier_contains(spec, version) is expected


def test_version_order():
    ordered = ["1.0.dev1", "1.0a1", "1.0b2", "1.0rc1", "1.0", "1.0+cu126", "1.0.post1", "1.1", "2!0.1"]
    assert sorted((Version(v) for v in reversed(ordered)), key=lambda v: v._key()) == [Version(v) for v in ordered]


@pytest.mark.parametrize(
    "text, name, extras, spec, marker",
    [
        ('nvidia-nccl-cu13==2.28.9; platform_system == "Linux"', "nvidia-nccl-cu13", [], "==2.28.9",
         'platform_system == "Linux"'),
        ("cuda-toolkit[cublas,cudart]==13.0.2; platform_system == \"Linux\"", "cuda-toolkit", ["cublas", "cudart"],
         "==13.0.2", 'platform_system == "Linux"'),
        ("cuda-bindings<14,>=13.0.3", "cuda-bindings", [], "<14,>=13.0.3", None),
        ("packaging", "packaging", [], "", None),
        ("foo (>=1.0)", "foo", [], ">=1.0", None),
        ("typing_extensions >= 4.10.0", "typing_extensions", [], ">=4.10.0", None),
    ],
)
def test_parse_requirement(text, name, extras, spec, marker):
    req = parse_requirement(text)
    assert (req["name"], req["extras"], req["specifier"], req["marker"]) == (name, extras, spec, marker)


def test_format_requirement_round_trip():
    req = parse_requirement("cuda-toolkit[cublas,nvrtc]==13.0.2; platform_system == 'Linux'")
    assert format_requirement(req) == "cuda-toolkit[cublas,nvrtc]==13.0.2"
    assert format_requirement(req, with_marker=True).endswith("; platform_system == 'Linux'")


@pytest.mark.parametrize(
    "marker, extras, expected",
    [
        ('platform_system == "Linux"', ("",), True),
        ('platform_system == "Windows"', ("",), False),
        ("(sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'cublas'", ("",), False),
        ("(sys_platform == 'linux' and platform_machine == 'x86_64') and extra == 'cublas'", ("", "cublas"), True),
        ("(sys_platform == 'linux' and platform_machine == 'aarch64') and extra == 'cublas'", ("cublas",), False),
        ('extra == "opt-einsum"', ("opt_einsum",), True),
        ('python_version >= "3.10"', ("",), True),
        ('python_version < "3.9" or sys_platform == "darwin"', ("",), False),
        ('"linux" in sys_platform', ("",), True),
        ('platform_machine not in "aarch64 ppc64le"', ("",), True),
    ],
)
def test_evaluate_marker(marker, extras, expected):
    assert evaluate_marker(marker, LINUX, extras) is expected


@pytest.mark.parametrize("bad", ["python_version >=", "nope == 'x'", "(python_version == '3.12'"])
def test_bad_markers_raise(bad):
    with pytest.raises(RequirementError):
        evaluate_marker(bad, LINUX)


def test_canonical_name():
    assert canonical_name("Typing_Extensions") == "typing-extensions"
    assert canonical_name("1cat_vllm") == "1cat-vllm"
