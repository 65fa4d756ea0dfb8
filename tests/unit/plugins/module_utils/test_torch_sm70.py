# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the recorded torch builds with and without sm_70 (module_utils/_torch_sm70.py, TORCH_SM70_BUILDS).

Ground truth: PyTorch's CUDA support matrix per release (RELEASE.md) and its RFCs, as cited next to
the table in _torch_sm70.py, and shared/reference/v100-serving-facts.md section 3 (cu126 keeps Volta
through 2.14, cu128 lost it in 2.11, no cu13x build has it).
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import sm70_cuda_tags, torch_keeps_sm70
from ansible_collections.volta.serving.plugins.plugin_utils._rules_software import check_software


@pytest.mark.parametrize(
    ("torch", "tag", "keeps"),
    [
        ("2.7.1", "cu126", True),
        ("2.7.1", "cu128", False),
        ("2.8.0", "cu128", True),
        ("2.8.0", "cu129", True),
        ("2.9.1", "cu128", True),
        ("2.10.0", "cu128", True),
        ("2.10.0+cu128", "cu128", True),
        ("2.11.0", "cu126", True),
        ("2.11.0", "cu128", False),
        ("2.12.0", "cu126", True),
        ("2.14.0", "cu126", True),
        ("2.9.0", "cu130", False),
        ("2.14.0", "cu132", False),
        ("3.0.0", "cu130", False),
        # Not recorded: not guessed.
        ("2.15.0", "cu126", None),
        ("2.11.0", "cu129", None),
        ("2.12.0", "cu128", None),
        ("2.6.0", "cu124", None),
        ("2.11.0", "cpu", None),
        ("latest", "cu126", None),
    ],
)
def test_torch_keeps_sm70(torch, tag, keeps):
    assert torch_keeps_sm70(torch, tag) is keeps


@pytest.mark.parametrize(
    ("torch", "tags"),
    [("2.10.0", ["cu126", "cu128"]), ("2.11.0", ["cu126"]), ("2.14.0", ["cu126"]), ("2.15.0", []), ("x", [])],
)
def test_sm70_cuda_tags(torch, tags):
    assert sm70_cuda_tags(torch) == tags


def ctx(torch, tag, cc=(7, 0)):
    return {
        "host": "h1",
        "cc": cc,
        "cc_text": "7.0",
        "driver_branch": "580",
        "driver_kernel_module": "proprietary",
        "cuda_version": "12.8",
        "engine_versions": {"vllm": {"torch_version": torch, "torch_cuda": tag}},
        "build_packages": None,
    }


VLLM = [{"engine": "vllm"}]


def test_without_sm70_names_the_builds_that_keep_it():
    [hit] = check_software(VLLM, ctx("2.11.0", "cu128"))
    assert hit["rule"] == "torch-without-sm70"
    assert hit["severity"] == "error"
    assert "torch 2.11.0+cu128 for vllm has no sm_70 kernels." in hit["message"]
    assert "torch 2.11 cu128 wheels without Volta" in hit["message"]
    assert "engine_vllm_torch_cuda: cu126)" in hit["message"]


def test_unknown_build_is_a_warning_not_a_guess():
    [hit] = check_software(VLLM, ctx("2.15.0", "cu126"))
    assert hit["rule"] == "torch-sm70-unknown"
    assert hit["severity"] == "warning"
    assert "whether torch 2.15.0+cu126 for vllm has sm_70 kernels is not known" in hit["message"]
    assert "the binary audit after install decides" in hit["message"]
    assert "keeps Volta through 2.14" in hit["message"]


@pytest.mark.parametrize(("torch", "tag"), [("2.11.0", "cu126"), ("2.10.0", "cu128"), ("2.14.0", "cu126")])
def test_known_good_builds_give_no_finding(torch, tag):
    assert check_software(VLLM, ctx(torch, tag)) == []


def test_not_checked_above_volta():
    assert check_software(VLLM, ctx("2.11.0", "cu130", cc=(8, 0))) == []
