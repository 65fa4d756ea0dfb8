"""After the seeded conflict was cleaned: one NCCL, torch's, and torch reports its version."""

import json

PY = "/opt/volta/engines/vllm/current/venv/bin/python"
UV = "/opt/volta/engines/.tools/uv-0.13.9/bin/uv"


def test_only_torchs_nccl_is_left(host):
    listing = host.check_output(f"{UV} pip list --python {PY} --format json")
    pkgs = {p["name"]: p["version"] for p in json.loads(listing)}
    assert [n for n in pkgs if n.startswith("nvidia-nccl")] == ["nvidia-nccl-cu12"]
    assert "nvidia-cublas" not in pkgs and pkgs["nvidia-cublas-cu12"] == "12.6.4.1"


def test_torch_nccl_version_matches_the_wheel(host):
    out = host.check_output(f"{PY} -I -c 'import torch; print(\".\".join(map(str, torch.cuda.nccl.version())))'")
    assert out == "2.27.5"


def test_libnccl_belongs_to_the_cu12_wheel(host):
    lib = host.check_output(f"{PY} -I -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])'")
    assert "dist=nvidia-nccl-cu12 version=2.27.5" in host.file(f"{lib}/nvidia/nccl/lib/libnccl.so.2").content_string
