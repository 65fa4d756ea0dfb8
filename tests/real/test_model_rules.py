"""The model rules (plugins/plugin_utils/_model_rules.py) against the REAL vLLM 0.21.0's ModelConfig.

Each case is a checkpoint of tests/fixtures/models (config.json recorded from the real model, no
weights), a max_model_len and a tensor_parallel. Real vLLM's ModelConfig reads the checkpoint and
verifies it against a ParallelConfig (``model_config_probe.py`` in the cached venv of
``vllm_venv.py``, one subprocess for every case); the serving plan's model rules read the same
checkpoint through volta.serving.model_facts. The verdicts must agree, and where vLLM refuses, the
finding quotes vLLM's own sentence. (The KV-heads rule is not here: vLLM checks that while it builds
the model's layers, which needs the weights and a GPU.)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import vllm_venv
from ansible_collections.volta.serving.plugins.module_utils._model_facts import gather
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MODELS = ROOT / "tests" / "fixtures" / "models"
VLLM_VERSION = "0.21.0"
RULES = ("heads-tp", "max-model-len-model")
SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 10, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 512}

# (id, checkpoint, max_model_len, tensor_parallel)
CASES = [
    ("qwen72b-32k-tp4", "Qwen2.5-72B-Instruct", 32768, 4),
    ("qwen72b-65k", "Qwen2.5-72B-Instruct", 65536, 4),
    ("qwen72b-tp3", "Qwen2.5-72B-Instruct", 32768, 3),
    ("command-r-v01-131k", "c4ai-command-r-v01", 131072, 4),
    ("command-r-v01-200k", "c4ai-command-r-v01", 200000, 4),
    ("command-r-08-2024-tp8", "c4ai-command-r-08-2024", 131072, 8),
    ("command-r-08-2024-tp5", "c4ai-command-r-08-2024", 32768, 5),
    ("deepseek-v2-lite-yarn", "DeepSeek-V2-Lite-Chat", 163840, 1),
    ("deepseek-v2-lite-above-yarn", "DeepSeek-V2-Lite-Chat", 163841, 1),
    ("qwen3-moe-tp8", "Qwen3-30B-A3B", 40960, 8),
    ("qwen3-moe-tp6", "Qwen3-30B-A3B", 40960, 6),
    ("flash-next-1m", "Qwen3.8-Flash-Next-NVFP4", 1048576, 4),
    ("flash-next-above-1m", "Qwen3.8-Flash-Next-NVFP4", 1048577, 4),
]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    for name in {case[1] for case in CASES}:
        shutil.copytree(MODELS / name, root / name)
    return root


@pytest.fixture(scope="module")
def real(checkpoints):
    python = vllm_venv.python(VLLM_VERSION)
    cases = [{"model": str(checkpoints / name), "max_model_len": mml, "tensor_parallel": tp}
             for _id, name, mml, tp in CASES]
    source = vllm_venv.CPU_PLATFORM_PRELUDE + (HERE / "model_config_probe.py").read_text(encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), "-c", source], input=json.dumps({"cases": cases}), capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    lines = [line for line in proc.stdout.splitlines() if line.startswith("VOLTA-PROBE-RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    print(f"\nreal vLLM {VLLM_VERSION}: {len(cases)} ModelConfigs, one subprocess, {time.monotonic() - started:.1f} s")
    return json.loads(lines[-1].split(" ", 1)[1])


def ours(checkpoints, name, mml, tp):
    model = str(checkpoints / name)
    inst = {"name": "m", "engine": "onecat", "model": model, "gpus": list(range(tp)), "tensor_parallel": tp,
            "max_model_len": mml, "max_num_batched_tokens": mml, "port": 8001}
    report = build_report(PlanInputs("real-host", dict(SERVER), [inst], keyed_instances=["m"],
                                     model_facts=gather([model])))
    return [f for f in report["findings"] if f["rule"] in RULES]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case[0] for case in CASES])
def test_model_rules_agree_with_real_vllm(real, checkpoints, index):
    _id, name, mml, tp = CASES[index]
    result, found = real[index], ours(checkpoints, name, mml, tp)
    if result["verdict"] == "accepted":
        assert found == [], [f["message"] for f in found]
        assert result["max_model_len"] == mml
        return
    assert len(found) == 1, (result["message"], [f["message"] for f in found])
    quoted = re.search(r"refuses to start[^']*'(.*)' Fix: ", found[0]["message"]).group(1)  # vLLM's own words
    assert quoted in result["message"], (quoted, result["message"])


def test_both_kinds_of_refusal_are_in_the_table(real):
    messages = " ".join(r["message"] for r in real)
    assert "must be divisible by tensor parallel size" in messages
    assert "is greater than the derived max_model_len" in messages
    assert sum(r["verdict"] == "accepted" for r in real) >= 6
