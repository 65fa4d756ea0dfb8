"""1Cat-vLLM 1.5.1 on Python 3.12 with torch 2.10.0+cu128."""

import json
import re
from pathlib import Path

SUMS = Path(__file__).resolve().parents[3] / "tests" / "lab" / ".build" / "www" / "files" / "SHA256SUMS"
ROOT = "/opt/volta/engines/onecat"
NAME = "onecat-1.5.1-torch2.10.0-cu128"
PY = f"{ROOT}/current/venv/bin/python"


def test_link_and_versions(host):
    assert host.file(f"{ROOT}/current").linked_to == f"{ROOT}/{NAME}"
    assert host.check_output(f"{PY} -I -c 'import sys; print(sys.version_info[:2])'") == "(3, 12)"
    assert host.check_output(f"{PY} -I -c 'import importlib.metadata as m; print(m.version(\"1cat_vllm\"))'") == "1.5.1"
    assert host.check_output(f"{PY} -I -c 'import torch; print(torch.__version__)'") == "2.10.0+cu128"
    assert "1.5.1" in host.check_output(f"{ROOT}/current/venv/bin/vllm --version")


def test_wheel_cached_and_recorded(host):
    # What the lab published for the stand-in release wheel, not what the role computed.
    sha = re.search(r"^([0-9a-f]{64}) [ *]?1cat_vllm-1\.5\.1-cp312", SUMS.read_text(), re.M).group(1)
    assert host.file("/var/cache/volta/engines/downloads/1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl").sha256sum == sha
    record = json.loads(host.file(f"{ROOT}/{NAME}/.volta-install.json").content_string)
    assert record["source_sha256"] == sha and record["distribution"] == "1cat_vllm"
    assert record["audit"]["consistent"] is True
    # engine_onecat_python is empty here: the wheel's cp312 tag and Ubuntu 24.04's Python 3.12 (the image's identity).
    assert record["python"]["source"] == "distribution" and record["python"]["request"] == "python3.12"
    assert "Ubuntu 24.04 ships Python 3.12, which 1Cat-vLLM 1.5.1 supports" in record["python"]["why"]
