"""tests/lab/pypi/standins/vllm-sdist: use_existing_torch.py, and the recorded facts the stand-in build uses."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

SDIST = Path(__file__).resolve().parents[2] / "lab" / "pypi" / "standins" / "vllm-sdist"
BUILD = Path(__file__).resolve().parents[2] / "lab" / "pypi" / "build"


def load_build():
    loader = importlib.machinery.SourceFileLoader("lab_pypi_build", str(BUILD))
    spec = importlib.util.spec_from_loader("lab_pypi_build", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_use_existing_torch_drops_every_torch_line(tmp_path):
    (tmp_path / "requirements" / "build").mkdir(parents=True)
    (tmp_path / "requirements" / "build" / "cuda.txt").write_text("packaging>=24.2\ntorch==2.11.0\nwheel\n")
    (tmp_path / "requirements" / "cuda.txt").write_text("-r common.txt\ntorch==2.11.0\ntorchaudio==2.11.0\n")
    (tmp_path / "requirements" / "common.txt").write_text("packaging\n")
    (tmp_path / "pyproject.toml").write_text('requires = [\n    "wheel",\n    "torch == 2.11.0",\n]\n')
    out = subprocess.run([sys.executable, str(SDIST / "use_existing_torch.py")], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert (tmp_path / "requirements" / "build" / "cuda.txt").read_text() == "packaging>=24.2\nwheel\n"
    assert (tmp_path / "requirements" / "cuda.txt").read_text() == "-r common.txt\n"
    assert (tmp_path / "pyproject.toml").read_text() == 'requires = [\n    "wheel",\n]\n'
    assert ">>> removed from pyproject.toml: \"torch == 2.11.0\"," in out
    assert (tmp_path / "requirements" / "common.txt").read_text() == "packaging\n"


def test_use_existing_torch_prefix_mode_keeps_other_lines_naming_torch(tmp_path):
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "x.txt").write_text("torch==2.11.0\n# keep: built against torch\n")
    (tmp_path / "pyproject.toml").write_text("")
    subprocess.run([sys.executable, str(SDIST / "use_existing_torch.py"), "--prefix"], cwd=tmp_path,
                   capture_output=True, check=True)
    assert (tmp_path / "requirements" / "x.txt").read_text() == "# keep: built against torch\n"


def test_recorded_release_facts():
    build = load_build()
    v21, v19 = build.VLLM_BINARIES["0.21.0"], build.VLLM_BINARIES["0.19.1"]
    # real 0.21.0 wheel: CUDA 13, no sm_70; real 0.19.1 wheel: CUDA 12 with sm_70 (readelf, .nv_fatbin)
    assert v21["cuda"] == "13" and 70 not in v21["fatbin"]["_C"][0] and min(v21["fatbin"]["_C"][1]) == 75
    assert v19["cuda"] == "12" and 70 in v19["fatbin"]["_C"][0]
    # CMakeLists.txt CUDA_SUPPORTED_ARCHS: 0.21.0 keeps 7.0 only below nvcc 12.8, 0.19.1 up to 12.x
    by_nvcc = {tuple(r["nvcc_at_least"]): r["archs"] for r in v21["supported"]}
    assert 70 not in by_nvcc[(12, 8)] and 70 in by_nvcc[(0, 0)] and 70 not in by_nvcc[(13, 0)]
    assert 70 in {tuple(r["nvcc_at_least"]): r["archs"] for r in v19["supported"]}[(12, 8)]
    assert v21["build_reqs"] == "requirements/build/cuda.txt" and v19["build_reqs"] == "requirements/build.txt"
