# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.model_facts module: main() end to end, through exit_json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import model_facts

REPO = Path(__file__).resolve().parents[4]
MODELS = REPO / "tests" / "fixtures" / "models"


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        model_facts.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("check_mode", [False, True])
def test_facts_for_every_model_path(tmp_path, capsys, check_mode):
    checkpoint = tmp_path / "qwen2.5-72b-instruct"
    shutil.copytree(MODELS / "Qwen2.5-72B-Instruct", checkpoint)
    gguf = tmp_path / "DeepSeek-V2-Lite-Chat-Q8_0.gguf"
    shutil.copy(MODELS / gguf.name, gguf)
    missing = str(tmp_path / "command-r-32b")
    args = {"models": [str(checkpoint), str(gguf), missing, "Qwen/Qwen3-8B", str(checkpoint)]}
    if check_mode:
        args["_ansible_check_mode"] = True
    rc, result = run_module(capsys, args)
    assert rc == 0
    assert result["changed"] is False
    facts = result["ansible_facts"]["volta_checkpoints"]
    assert list(facts) == [str(checkpoint), str(gguf), missing, "Qwen/Qwen3-8B"]
    assert facts[str(checkpoint)]["weights_bytes"] == 145412407296
    assert facts[str(checkpoint)]["config"]["architectures"] == ["Qwen2ForCausalLM"]
    assert facts[str(gguf)]["gguf_architecture"] == "deepseek2"
    assert (facts[missing]["exists"], facts[missing]["local"]) == (False, True)
    assert facts["Qwen/Qwen3-8B"]["local"] is False


def test_models_is_required(capsys):
    rc, result = run_module(capsys, {})
    assert rc == 1
    assert "missing required arguments: models" in result["msg"]
