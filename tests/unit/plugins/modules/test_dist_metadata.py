# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.dist_metadata end to end: main() on a file:// index and on wheel files."""

from __future__ import annotations

import hashlib
import json
import zipfile

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import dist_metadata

# vLLM 0.19.1's real torch requirements (tests/real/test_vllm_pins.py reads them from the real index).
VLLM_0191_REQUIRES = ["torch==2.10.0", "torchaudio==2.10.0", "torchvision==0.25.0"]
# What engine/tasks/pins.yml reports (after "<host>: ") for vLLM 0.19.1 on torch 2.11.0.
MISMATCH_0191_ON_211 = (
    "vllm 0.19.1 requires torch==2.10.0 but engine_vllm_torch_version is 2.11.0. Why: vllm is compiled against "
    "that torch (its metadata: Requires-Dist: torch==2.10.0) and is installed --no-deps next to the torch the role "
    "pins, so nothing else stops the mismatch: its compiled extensions fail to load (undefined symbol) or "
    "misbehave when the server starts, after the smoke test has passed. Fix: set engine_vllm_torch_version: "
    "2.10.0 with a CUDA tag that keeps sm_70 (engine_vllm_torch_cuda: cu126 or cu128), or pin a vllm release "
    "that requires torch 2.11.0."
)


def metadata(name, version, requires):
    return "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
                   + [f"Requires-Dist: {r}\n" for r in requires])


def write_wheel(path, name, version, requires=()):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}-{version}.dist-info/METADATA", metadata(name, version, requires))
    return path


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        dist_metadata.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def index(tmp_path):
    """A file:// PEP 503 index with vLLM 0.19.1's wheel and its PEP 658 metadata file."""
    (tmp_path / "simple" / "vllm").mkdir(parents=True)
    wheel = write_wheel(tmp_path / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm", "0.19.1",
                        VLLM_0191_REQUIRES)
    meta = metadata("vllm", "0.19.1", VLLM_0191_REQUIRES).encode()
    (tmp_path / (wheel.name + ".metadata")).write_bytes(meta)
    (tmp_path / "simple" / "vllm" / "index.html").write_text(
        f'<a href="../../{wheel.name}" data-core-metadata="sha256={hashlib.sha256(meta).hexdigest()}">{wheel.name}</a>')
    return (tmp_path / "simple").as_uri()


@pytest.mark.parametrize("check_mode", [False, True])
def test_reads_the_index_and_reports_the_torch_mismatch(capsys, index, check_mode):
    rc, result = run(capsys, {
        "name": "vllm", "version": "0.19.1", "index_url": index, "torch_version": "2.11.0",
        "torch_variable": "engine_vllm_torch_version", "cuda_variable": "engine_vllm_torch_cuda",
        "_ansible_check_mode": check_mode,
    })
    assert rc == 0
    assert result["changed"] is False
    assert result["method"] == "pep658"
    assert result["requires_dist"] == VLLM_0191_REQUIRES
    assert result["pins"]["torch"] == "2.10.0"
    assert result["problems"] == [MISMATCH_0191_ON_211]


def test_no_problems_without_torch_version(capsys, index):
    rc, result = run(capsys, {"name": "vllm", "version": "0.19.1", "index_url": index})
    assert rc == 0 and result["problems"] == []


def test_wheel_file_and_companions(capsys, tmp_path):
    wheel = write_wheel(tmp_path / "1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl", "1cat_vllm", "1.5.1",
                        ["torch==2.10.0", "torchvision==0.25.0"])
    rc, result = run(capsys, {"name": "1cat-vllm", "version": "1.5.1", "src": str(wheel), "torch_version": "2.10.0",
                              "companions": {"torchvision": "0.25.0"}})
    assert rc == 0
    assert (result["method"], result["problems"]) == ("file", [])


def test_wheel_of_another_release_fails(capsys, tmp_path):
    wheel = write_wheel(tmp_path / "1cat_vllm-1.5.0-cp312-cp312-linux_x86_64.whl", "1cat_vllm", "1.5.0")
    rc, result = run(capsys, {"name": "1cat_vllm", "version": "1.5.1", "src": str(wheel)})
    assert rc == 1
    assert result["msg"] == (f"cannot read the metadata of 1cat_vllm 1.5.1: {wheel}: metadata is for 1cat_vllm "
                             "1.5.0, not 1cat_vllm 1.5.1")


def test_unreachable_index_fails_naming_url(capsys):
    rc, result = run(capsys, {"name": "vllm", "version": "1", "index_url": "http://127.0.0.1:9/simple"})
    assert rc == 1
    assert result["msg"].startswith("cannot read the metadata of vllm 1: http://127.0.0.1:9/simple/vllm/: "
                                    "cannot connect (")


def test_index_and_src_exclude_each_other(capsys, tmp_path):
    rc, result = run(capsys, {"name": "x", "version": "1", "index_url": "http://i/simple", "src": "/x.whl"})
    assert rc == 1 and "mutually exclusive" in result["msg"]
