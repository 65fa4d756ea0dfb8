"""The lab stand-in's check of a local model path against the REAL vLLM 0.21.0 ``get_config``.

The stand-in ``vllm serve`` (tests/lab/pypi/standins/vllm/vllm/_volta_lab/cli.py, ``model_error``)
refuses a local model path without a configuration, as vLLM does before it loads anything; the
engine_service switch back to a previous model revision is tested on that refusal. Here the real
``vllm.transformers_utils.config.get_config`` (in the cached venv of ``vllm_venv.py``, offline) runs
on the same paths: where it raises, the stand-in's message is its message; where it reads the
configuration, the stand-in accepts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import vllm_venv

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "tests" / "lab" / "pypi" / "standins" / "vllm" / "vllm" / "_volta_lab" / "cli.py"
MODELS = ROOT / "tests" / "fixtures" / "models"
VLLM_VERSION = "0.21.0"
MARKER = "VOLTA-PROBE-RESULT "
PROBE = """
import json, sys
from vllm.transformers_utils.config import get_config
out = []
for path in json.load(sys.stdin):
    try:
        get_config(path, trust_remote_code=False)
        out.append(None)
    except Exception as exc:
        out.append(f"{type(exc).__name__}: {exc}")
sys.stdout.write("\\n" + MARKER + json.dumps(out) + "\\n")
"""


def standin():
    spec = importlib.util.spec_from_file_location("volta_lab_vllm_cli", CLI)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = tmp_path_factory.mktemp("model-paths")
    (root / "empty").mkdir()
    (root / "weights-only").mkdir()
    (root / "weights-only" / "model.safetensors.index.json").write_text("{}")
    shutil.copytree(MODELS / "Qwen2.5-7B-Instruct", root / "qwen7b")
    return {"empty": root / "empty", "weights-only": root / "weights-only", "absent": root / "absent",
            "qwen7b": root / "qwen7b"}


def test_the_standin_refuses_and_accepts_model_paths_as_real_vllm_does(paths):
    names = sorted(paths)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    source = vllm_venv.CPU_PLATFORM_PRELUDE + PROBE.replace("MARKER", repr(MARKER))
    proc = subprocess.run([str(vllm_venv.python(VLLM_VERSION)), "-c", source], env=env, capture_output=True,
                          text=True, input=json.dumps([str(paths[n]) for n in names]), timeout=600, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    real = dict(zip(names, json.loads(lines[-1][len(MARKER):]), strict=True))
    ours = {n: standin().model_error(str(paths[n])) for n in names}
    assert real["qwen7b"] is None and ours["qwen7b"] is None
    for name in ("empty", "weights-only", "absent"):
        assert real[name] is not None and real[name].startswith("ValueError: Invalid repository ID"), real[name]
        assert ours[name] == real[name].rstrip("\n"), name
