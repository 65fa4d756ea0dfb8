"""The binary audit (volta.serving.cuda_binary_audit) on the real compiled extensions of vLLM and torch wheels.

Only the ``.so`` members the tests read are extracted, into pytest's temporary directory, once per wheel
(about 15 s in all on the build machines: 1.1 GB of vLLM 0.19.1 extensions, 0.45 GB of torch).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._binary_audit import audit, find_files, inspect, judge
from artifacts import extract, fetch, member

ROOT = Path(__file__).resolve().parents[2]
CAPTURED_TORCH = ROOT / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580" / "torch.json"
V21_FILES = ("vllm/_C.abi3.so", "vllm/_moe_C.abi3.so", "vllm/_C_stable_libtorch.abi3.so",
             "vllm/cumem_allocator.abi3.so")
CU126 = ("12.6", "2.11.0+cu126")


def _is_so(name):
    return name.endswith(".so")


@pytest.fixture(scope="module")
def unpack(tmp_path_factory):
    """``unpack(project, version, predicate)`` -> a site directory with the wheel members chosen, once per call."""
    done = {}

    def run(project, version, predicate=_is_so):
        key = (project, version, predicate)
        if key not in done:
            done[key] = tmp_path_factory.mktemp(f"{project}-{version}")
            extract(fetch(project, version), predicate, done[key])
        return done[key]
    return run


def _detail(site, rel, sm, torch_cuda, torch_version):
    return judge(rel, inspect(site / rel), sm, int(torch_cuda.split(".")[0]), f"torch {torch_version}")


def test_vllm_0_21_0_is_refused_on_sm70_for_cuda_13(unpack):
    site = unpack("vllm", "0.21.0", lambda name: name in V21_FILES)
    result = audit(find_files([str(site)]), 70, *CU126)
    assert result["ok"] is False and result["files"]["checked"] == 4
    assert sorted(result["problems"]) == sorted([
        "vllm/_C.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code for sm_70 "
        "(lowest sm_75)",
        "vllm/_moe_C.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code for sm_70 "
        "(lowest sm_75)",
        "vllm/_C_stable_libtorch.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code "
        "for sm_70 (lowest sm_75)",
        "vllm/cumem_allocator.abi3.so needs libnvrtc.so.13 but torch 2.11.0+cu126 brings CUDA 12",
    ])
    c = next(d for d in result["files"]["problem"] if d["path"] == "vllm/_C.abi3.so")
    assert c["cuda_needed"] == {"libcudart.so.13": [13]} and c["errors"] == []
    assert c["sass"] == ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
    assert c["containers"] == 82 and c["containers_without_code"] == 82


@pytest.mark.parametrize("torch_cuda, torch_version", [("12.6", "2.11.0+cu126"), ("12.8", "2.10.0+cu128")])
def test_vllm_0_19_1_extension_runs_on_sm70_with_cuda_12(unpack, torch_cuda, torch_version):
    site = unpack("vllm", "0.19.1")
    detail = _detail(site, "vllm/_C.abi3.so", 70, torch_cuda, torch_version)
    assert detail["message"] is None and detail["errors"] == []
    assert detail["cuda_needed"] == {"libcudart.so.12": [12]} and detail["cuda_ok"] is True
    assert "sm_70" in detail["sass"] and detail["runnable"] is True


def test_vllm_0_19_1_extension_is_refused_next_to_a_cuda_13_torch(unpack):
    site = unpack("vllm", "0.19.1")
    detail = _detail(site, "vllm/_C.abi3.so", 70, "13.0", "2.11.0+cu130")
    assert detail["message"] == "vllm/_C.abi3.so needs libcudart.so.12 but torch 2.11.0+cu130 brings CUDA 13"


def test_vllm_0_19_1_whole_wheel_passes_on_sm70_with_its_sm80_extensions_optional(unpack):
    site = unpack("vllm", "0.19.1")
    result = audit(find_files([str(site)]), 70, "12.8", "2.10.0+cu128")
    assert result["ok"] is True, result["problems"]
    assert result["files"]["checked"] == 8 and result["read_errors"] == []
    assert sorted(n.split(" ")[0] for n in result["notes"]) == [
        "vllm/_flashmla_C.abi3.so", "vllm/_flashmla_extension_C.abi3.so",
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so"]


def test_torch_2_11_0_wheel_reported_as_it_is(unpack):
    """The torch 2.11.0 the Python index serves: the audit's CUDA major and SMs against torch's own records."""
    wheel = fetch("torch", "2.11.0")
    version_py = member(wheel, "torch/version.py").decode()
    torch_version = re.search(r"^__version__ = '([^']+)'", version_py, re.M).group(1)
    torch_cuda = re.search(r"^cuda: Optional\[str\] = '([^']+)'", version_py, re.M).group(1)
    site = unpack("torch", "2.11.0", lambda name: name == "torch/lib/libtorch_cuda.so")
    detail = _detail(site, "torch/lib/libtorch_cuda.so", 70, torch_cuda, torch_version)
    majors = {m for ms in detail["cuda_needed"].values() for m in ms}
    assert detail["cuda_needed"]["libcudart.so.13"] == [13] and int(torch_cuda.split(".")[0]) in majors
    assert detail["cuda_ok"] is True and detail["errors"] == []
    captured = json.loads(CAPTURED_TORCH.read_text())
    assert captured["torch"] == torch_version and captured["cuda"] == torch_cuda
    assert set(captured["arch"]) <= set(detail["sass"]) and detail["sass"][0] == captured["arch"][0] == "sm_75"
    assert detail["ptx"] == []
    assert detail["message"] == "torch/lib/libtorch_cuda.so has no code for sm_70 (lowest sm_75)"
    on_h200 = judge("torch/lib/libtorch_cuda.so", inspect(site / "torch/lib/libtorch_cuda.so"), 90, 13, "torch")
    assert on_h200["message"] is None


def test_kernels_outside_nv_fatbin_are_read(unpack):
    # The real libcufft.so.12 of nvidia-cufft 12.0.0.61 (torch 2.11.0+cu130's cuFFT) keeps only sm_75
    # code in its .nv_fatbin; its kernels, sm_75 ... sm_120, are containers of their own in its data.
    # Read on the H200 host, the .nv_fatbin alone said "no code for sm_90" (tests/device/binary_audit.py).
    site = unpack("nvidia-cufft", "12.0.0.61", lambda name: name.endswith("libcufft.so.12"))
    files = find_files([str(site)])
    checked = {"optional": ()}  # judged like an extension, not as an NVIDIA library (see DEFAULT_OPTIONAL)
    assert audit(files, 90, "13.0", "2.11.0+cu130", **checked)["ok"] is True
    assert audit(files, 70, "13.0", "2.11.0+cu130", **checked)["problems"] == [
        "nvidia/cu13/lib/libcufft.so.12 has no code for sm_70 (lowest sm_75)"]
    # By default NVIDIA's libraries only note what has no code for the GPU.
    assert audit(files, 70, "13.0", "2.11.0+cu130")["notes"] == [
        "nvidia/cu13/lib/libcufft.so.12 has no code for sm_70 (lowest sm_75): optional (not judged)"]
    sass = {sm for s, _p in inspect(site / "nvidia/cu13/lib/libcufft.so.12")["containers"] for sm in s}
    assert {75, 80, 86, 89, 90, 100, 120} <= sass
