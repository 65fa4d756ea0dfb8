"""Verify the vllm flavour: expected values come from the scenario and the lab's stand-in wheels and sdist.

engine-vllm (first in play order) builds vLLM from the stand-in sdist; engine-vllm-b copies that wheel.
"""

import glob
import json
import os

ROOT = "/opt/volta/engines"
NAME = "vllm-0.21.0-torch2.11.0-cu126"
PY = f"{ROOT}/vllm/current/venv/bin/python"
FUSED_MOE = "vllm/model_executor/layers/fused_moe/fused_moe.py"
KEY = "vllm-0.21.0-torch2.11.0-cu126-cuda12.6-sm70-cp311"
BUILDER = "engine-vllm"
CACHE = "/var/cache/volta/engines"
BUILD_LOG = f"{CACHE}/logs/build-{KEY}-from-source.log"


def py(host, code):
    return host.check_output(f"{PY} -I -c '{code}'")


def test_current_link_names_the_install(host):
    link = host.file(f"{ROOT}/vllm/current")
    assert link.is_symlink and link.linked_to == f"{ROOT}/vllm/{NAME}"
    assert host.file(f"{ROOT}/vllm/{NAME}/.volta-install.json").is_file


def test_torch_has_sm70_and_vllm_version(host):
    assert "sm_70" in json.loads(py(host, "import json, torch; print(json.dumps(torch.cuda.get_arch_list()))"))
    assert py(host, "import torch; print(torch.__version__)") == "2.11.0+cu126"
    assert py(host, "import importlib.metadata as m; print(m.version(\"vllm\"))") == "0.21.0"
    assert host.check_output(f"{ROOT}/vllm/current/venv/bin/vllm --version").strip().endswith("0.21.0")


def test_one_nccl_the_one_torch_pins(host):
    listing = host.check_output(f"{ROOT}/.tools/uv-0.13.9/bin/uv pip list --python {PY} --format json")
    nvidia = {p["name"]: p["version"] for p in json.loads(listing) if p["name"].startswith("nvidia-")}
    assert [n for n in nvidia if n.startswith("nvidia-nccl")] == ["nvidia-nccl-cu12"]
    assert nvidia["nvidia-nccl-cu12"] == "2.27.5"
    assert not [n for n in nvidia if not n.endswith("-cu12")]


def test_patches_applied_exactly_once(host):
    path = py(host, "import sysconfig; print(sysconfig.get_paths()[\"purelib\"])") + "/" + FUSED_MOE
    text = host.file(path).content_string
    assert text.count("# >>> volta.serving: fused_moe_sm70_block_k") == 1
    assert text.count("# <<< volta.serving: fused_moe_sm70_block_k") == 1
    # 0.21.0 already has the upstream int64 cast: nothing of ours there
    assert "volta.serving: fused_moe_int64_offsets" not in text
    assert text.count("offs_token = offs_token.to(tl.int64)") == 1


def test_python_chosen_for_debian12_is_recorded(host):
    # engine_python is empty in this scenario: the role chose Debian 12's own Python 3.11.
    record = json.loads(host.file(f"{ROOT}/vllm/{NAME}/.volta-install.json").content_string)
    assert record["python"]["version"] == "3.11"
    assert record["python"]["source"] == "distribution"
    assert record["python"]["request"] == "python3.11"
    assert "Debian 12" in record["python"]["why"] and "<3.15,>=3.10" in record["python"]["why"]
    assert py(host, "import sys; print(sys.version_info[:2])") == "(3, 11)"
    assert host.package("python3.11-dev").is_installed


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)
    vllm = facts["engines"]["vllm"]
    assert vllm["current"] == NAME and vllm["version"] == "0.21.0" and vllm["torch"] == "2.11.0+cu126"
    assert vllm["python"] == "3.11"
    assert vllm["patches"] == {"fused_moe_int64_offsets": "fixed_upstream", "fused_moe_sm70_block_k": "applied"}
    assert vllm["audit"]["consistent"] is True and vllm["audit"]["findings"] == []


def record(host):
    return json.loads(host.file(f"{ROOT}/vllm/{NAME}/.volta-install.json").content_string)["build"]


def controller_sha256():
    sums = glob.glob(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "wheels", KEY, "*.whl.sha256"))
    assert len(sums) == 1, sums
    with open(sums[0], encoding="utf-8") as fh:
        return fh.read().split()[0]


def test_first_host_compiled_the_second_copied(host):
    build = record(host)
    assert build["method"] == "source" and build["key"] == KEY and build["built_by"] == BUILDER
    if host.backend.get_hostname() == BUILDER:
        assert build["path"] == "build" and build["log"] == BUILD_LOG
        log = host.file(BUILD_LOG)
        assert log.is_file and "Building CUDA object" in log.content_string
        assert host.file(f"{CACHE}/build/{KEY}/src/setup.py").is_file  # kept, so that a rerun resumes
    else:
        assert build["path"] == "copy"
        assert build["copied_from"].startswith(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
        assert not host.file(BUILD_LOG).exists
        assert not host.file(f"{CACHE}/build").exists


def test_both_hosts_installed_the_same_wheel(host):
    build = record(host)
    assert build["wheel_sha256"] == controller_sha256()
    where = f"{CACHE}/build/{KEY}/dist" if build["path"] == "build" else f"{CACHE}/wheels/{KEY}"
    assert host.check_output(f"sha256sum {where}/{build['wheel']}").split()[0] == build["wheel_sha256"]


def test_stand_in_build_record_shows_what_the_role_passed(host):
    # Written by the stand-in sdist's setup.py at build time, installed with the wheel on both hosts.
    path = py(host, "import os, vllm; print(os.path.dirname(vllm.__file__))") + "/_volta_lab/source_build.json"
    got = json.loads(host.file(path).content_string)
    assert got["env"]["TORCH_CUDA_ARCH_LIST"] == "7.0" and got["env"]["VLLM_TARGET_DEVICE"] == "cuda"
    # the CUDA of torch's cu126 build, which the role installed: vLLM 0.21.0 drops 7.0 with nvcc >= 12.8
    assert got["env"]["CUDA_HOME"] == "/usr/local/cuda-12.6" and got["nvcc_cuda"].startswith("12.6")
    assert got["built_archs"] == "7.0" and got["fatbin"]["sass"] == [70]
    assert int(got["env"]["MAX_JOBS"]) >= 1 and got["jobs"] == int(got["env"]["MAX_JOBS"])
    # no build isolation: the build saw the venv's own torch (cu126), not the index's
    assert got["torch"]["version"] == "2.11.0+cu126"
    assert got["torch"]["path"].startswith(f"{ROOT}/vllm/{NAME}/venv/")
    assert got["version"] == "0.21.0"


def test_compiled_extension_imports(host):
    # like vLLM itself: torch first (it loads libtorch and the CUDA runtime the extension links)
    assert py(host, "import torch, vllm._C; print(\"ok\")") == "ok"
