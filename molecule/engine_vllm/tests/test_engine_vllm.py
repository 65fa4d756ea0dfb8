"""Verify the vllm flavour: expected values come from the scenario and the lab's stand-in wheels."""

import json

ROOT = "/opt/volta/engines"
NAME = "vllm-0.21.0-torch2.11.0-cu126"
PY = f"{ROOT}/vllm/current/venv/bin/python"
FUSED_MOE = "vllm/model_executor/layers/fused_moe/fused_moe.py"


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


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)
    vllm = facts["engines"]["vllm"]
    assert vllm["current"] == NAME and vllm["version"] == "0.21.0" and vllm["torch"] == "2.11.0+cu126"
    assert vllm["patches"] == {"fused_moe_int64_offsets": "fixed_upstream", "fused_moe_sm70_block_k": "applied"}
    assert vllm["audit"]["consistent"] is True and vllm["audit"]["findings"] == []
