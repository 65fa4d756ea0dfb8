# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the CUDA wheel audit: tables of venv states, including the real H200 venv."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._cuda_audit import (
    PROBE,
    AuditError,
    audit,
    clean_commands,
    is_cuda_library,
    parse_probe,
    predicted_after,
)

REPO = Path(__file__).resolve().parents[4]
CAPTURES = REPO / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"
LINUX = {
    "os_name": "posix", "sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux",
    "platform_python_implementation": "CPython", "platform_release": "6.8.0", "platform_version": "#1",
    "python_version": "3.12", "python_full_version": "3.12.3", "implementation_name": "cpython",
    "implementation_version": "3.12.3",
}
TK_MARK = "(sys_platform == 'linux' and platform_machine == 'x86_64')"
# cuda-toolkit 13.0.2's extras -> the libraries each pulls, with the real wheel's specifier shapes
# (``==<ver>.*``; nvjitlink ``>=<ver>,<14``). Versions: the captured pip list.
TOOLKIT_EXTRAS = {
    "cublas": ["nvidia-cublas", "nvidia-cuda-nvrtc"], "cudart": ["nvidia-cuda-runtime"],
    "cufft": ["nvidia-cufft", "nvidia-nvjitlink"], "cufile": ["nvidia-cufile"], "cupti": ["nvidia-cuda-cupti"],
    "curand": ["nvidia-curand"], "cusolver": ["nvidia-cublas", "nvidia-cusolver", "nvidia-cusparse",
                                              "nvidia-nvjitlink"],
    "cusparse": ["nvidia-cusparse", "nvidia-nvjitlink"], "nvjitlink": ["nvidia-nvjitlink"],
    "nvrtc": ["nvidia-cuda-nvrtc"], "nvtx": ["nvidia-nvtx"],
}
LIB_DEPS = {
    "nvidia-cudnn-cu13": ["nvidia-cublas"], "nvidia-cusolver": ["nvidia-cublas", "nvidia-nvjitlink", "nvidia-cusparse"],
    "nvidia-cusparse": ["nvidia-nvjitlink"], "nvidia-cufft": ["nvidia-nvjitlink"],
    "nvidia-cudnn-cu12": ["nvidia-cublas-cu12"], "nvidia-cusolver-cu12": ["nvidia-cublas-cu12",
                                                                          "nvidia-nvjitlink-cu12",
                                                                          "nvidia-cusparse-cu12"],
}
CU126 = {
    "nvidia-cuda-nvrtc-cu12": "12.6.77", "nvidia-cuda-runtime-cu12": "12.6.77", "nvidia-cuda-cupti-cu12": "12.6.80",
    "nvidia-cudnn-cu12": "9.10.2.21", "nvidia-cublas-cu12": "12.6.4.1", "nvidia-cufft-cu12": "11.3.0.4",
    "nvidia-curand-cu12": "10.3.7.77", "nvidia-cusolver-cu12": "11.7.1.2", "nvidia-cusparse-cu12": "12.5.4.2",
    "nvidia-cusparselt-cu12": "0.7.1", "nvidia-nccl-cu12": "2.27.5", "nvidia-nvtx-cu12": "12.6.77",
    "nvidia-nvjitlink-cu12": "12.6.85", "nvidia-cufile-cu12": "1.11.1.6",
}


def capture(name):
    path = CAPTURES / name
    if not path.is_file():
        pytest.fail(f"real capture missing: {path}")
    return path.read_text(encoding="utf-8")


def dist(name, version, requires=(), cuda_files=None):
    if cuda_files is None:
        cuda_files = name.startswith("nvidia-")
    return {"name": name, "version": version, "requires": list(requires), "files_known": True,
            "cuda_files": cuda_files}


def h200_inventory():
    """The real H200 venv: versions from pip-list.txt, torch's pins from torch-requires.json."""
    rows = [line.split() for line in capture("pip-list.txt").splitlines()[2:] if line.strip()]
    versions = dict(rows)
    torch_requires = json.loads(capture("torch-requires.json"))
    toolkit = []
    for extra, names in TOOLKIT_EXTRAS.items():
        for name in names:
            ver = versions[name]
            spec = f">={ver},<14" if name == "nvidia-nvjitlink" else f"=={ver}.*"
            toolkit.append(f"{name}{spec}; {TK_MARK} and extra == '{extra}'")
    dists = []
    for name, version in versions.items():
        if name == "torch":
            dists.append(dist(name, version, torch_requires))
        elif name == "cuda-toolkit":
            dists.append(dist(name, version, toolkit))
        elif name == "nvidia-ml-py":  # pynvml.py: no files under nvidia/
            dists.append(dist(name, version, cuda_files=False))
        else:
            dists.append(dist(name, version, LIB_DEPS.get(name, ())))
    return {"env": LINUX, "distributions": dists}


def cu126_inventory(extra=(), drop=(), versions=None):
    pins = dict(CU126, **(versions or {}))
    torch_reqs = [f'{n}=={CU126[n]}; platform_system == "Linux"' for n in CU126] + [
        'triton==3.6.0; platform_system == "Linux"', "filelock", 'pyyaml; extra == "pyyaml"']
    dists = [dist("torch", "2.11.0+cu126", torch_reqs), dist("triton", "3.6.0"), dist("filelock", "3.32.5"),
             dist("packaging", "26.3"), dist("vllm", "0.21.0", ["torch==2.11.0", "nvidia-nccl-cu13==2.28.9"])]
    dists += [dist(n, v, LIB_DEPS.get(n, ())) for n, v in pins.items() if n not in drop]
    dists += [dist(n, v) for n, v in extra]
    return {"env": LINUX, "distributions": dists}


def test_real_h200_cu130_venv_is_consistent():
    result = audit(h200_inventory())
    assert result["findings"] == []
    assert result["consistent"] is True
    assert result["root"] == {"name": "torch", "version": "2.11.0"}
    # cuda-toolkit's extras give exact pins for the unsuffixed CUDA 13 libraries
    assert result["wanted"]["nvidia-cublas"] == "==13.1.0.3.*"
    assert result["wanted"]["nvidia-nccl-cu13"] == "==2.28.9"
    assert result["wanted"]["nvidia-nvjitlink"].startswith(">=13.0.88,<14")
    assert "nvidia-ml-py" not in result["installed"]
    assert len(result["installed"]) == 15
    assert result["reinstall"][0].startswith("cuda-toolkit[cublas,cudart,cufft")
    assert "nvidia-nccl-cu13==2.28.9" in result["reinstall"]


def test_h200_venv_with_a_cu12_nccl_is_not():
    inv = h200_inventory()
    inv["distributions"].append(dist("nvidia-nccl-cu12", "2.27.5"))
    kinds = sorted(f["kind"] for f in audit(inv)["findings"])
    assert kinds == ["duplicate_nccl", "mixed_cuda_suffix", "unwanted"]


def test_h200_venv_with_a_wrong_cublas():
    inv = h200_inventory()
    for d in inv["distributions"]:
        if d["name"] == "nvidia-cublas":
            d["version"] = "13.2.0.9"
    findings = audit(inv)["findings"]
    assert [(f["kind"], f["distribution"], f["wanted"]) for f in findings] == [
        ("version_mismatch", "nvidia-cublas", "==13.1.0.3.*")]
    assert "cuda-toolkit" in findings[0]["message"]


@pytest.mark.parametrize(
    "extra, drop, versions, kinds",
    [
        ((), (), None, []),
        ((("nvidia-nccl-cu13", "2.28.9"),), (), None, ["duplicate_nccl", "mixed_cuda_suffix", "unwanted"]),
        ((("nvidia-cublas", "13.1.0.3"),), (), None, ["unwanted"]),
        ((), ("nvidia-nccl-cu12",), None, ["missing"]),
        ((), (), {"nvidia-nccl-cu12": "2.26.2"}, ["version_mismatch"]),
        ((("nvidia-ml-py", "13.610.43"),), (), None, ["unwanted"]),  # counted when it ships nvidia/ files
    ],
)
def test_cu126_table(extra, drop, versions, kinds):
    result = audit(cu126_inventory(extra, drop, versions))
    assert sorted(f["kind"] for f in result["findings"]) == kinds
    assert result["consistent"] is (not kinds)
    for finding in result["findings"]:
        assert set(finding) == {"kind", "distribution", "installed", "wanted", "message"}
        assert finding["message"]


def test_cu126_clean_plan():
    result = audit(cu126_inventory(extra=(("nvidia-nccl-cu13", "2.28.9"),)))
    assert result["reinstall"] == [f"{n}=={v}" for n, v in CU126.items()]
    assert "nvidia-nccl-cu13" in result["installed"]
    after = predicted_after(result)
    assert "nvidia-nccl-cu13" not in after and after["nvidia-nccl-cu12"] == "2.27.5"
    uv = clean_commands("/v/bin/python", "http://i/cu126/", sorted(result["installed"]), result["reinstall"], "/u/uv")
    assert uv[0][:5] == ["/u/uv", "pip", "uninstall", "--python", "/v/bin/python"]
    assert uv[1][:7] == ["/u/uv", "pip", "install", "--python", "/v/bin/python", "--index-url", "http://i/cu126/"]
    pip = clean_commands("/v/bin/python", "http://i/cu126/", ["a"], ["b==1"])
    assert pip == [["/v/bin/python", "-m", "pip", "uninstall", "--yes", "a"],
                   ["/v/bin/python", "-m", "pip", "install", "--no-input", "--index-url", "http://i/cu126/", "b==1"]]


def test_no_torch():
    result = audit({"env": LINUX, "distributions": [dist("nvidia-nccl-cu12", "2.27.5")]})
    assert result["consistent"] is False
    assert result["findings"][0]["kind"] == "missing" and result["root"] is None


def test_ignore_and_library_detection():
    assert not is_cuda_library(dist("nvidia-ml-py", "1", cuda_files=False))
    assert is_cuda_library({"name": "nvidia-x", "version": "1", "files_known": False})
    assert not is_cuda_library(dist("nvidia-nccl-cu13", "2"), ignore=["nvidia_nccl_cu13"])
    assert audit(cu126_inventory(extra=(("nvidia-nccl-cu13", "2.28.9"),)), ignore=["nvidia-nccl-cu13"])["consistent"]


def test_parse_probe_errors():
    with pytest.raises(AuditError, match="no JSON"):
        parse_probe("Traceback ...")
    with pytest.raises(AuditError, match="importlib"):
        parse_probe('{"error": "importlib.metadata is missing"}')


def test_probe_runs_on_this_interpreter():
    out = subprocess.run([sys.executable, "-I", "-c", PROBE], check=True, capture_output=True, text=True).stdout
    data = parse_probe(out)
    assert data["env"]["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert any(d["name"].lower() == "pytest" for d in data["distributions"])
