# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_model_facts.py: what a local model path holds.

The checkpoints are those of tests/fixtures/models (config.json and the index recorded from the
real models, no weights); weight files and GGUF headers are written here.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._model_facts import (
    gather,
    gguf_architecture,
    model_facts,
    split_gguf_parts,
)

REPO = Path(__file__).resolve().parents[4]
MODELS = REPO / "tests" / "fixtures" / "models"


def checkpoint(tmp_path, name):
    target = tmp_path / name
    shutil.copytree(MODELS / name, target)
    return target


def gguf_bytes(keys):
    """A GGUF v3 header with *keys*: a list of (key, type id, packed value)."""
    def text(value):
        data = value.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(keys))
    for key, kind, value in keys:
        out += text(key) + struct.pack("<I", kind) + value
    return out


def test_index_total_size_is_the_weights_size(tmp_path):
    path = checkpoint(tmp_path, "Qwen2.5-72B-Instruct")
    facts = model_facts(str(path))
    assert facts["exists"] is True
    assert facts["kind"] == "directory"
    assert facts["config"]["num_attention_heads"] == 64
    assert facts["weights_bytes"] == 145412407296
    assert facts["weights_from"] == "model.safetensors.index.json"
    assert facts["config_error"] is None


def test_without_an_index_the_weight_files_are_summed(tmp_path):
    path = tmp_path / "m"
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}))
    (path / "model-00001-of-00002.safetensors").write_bytes(b"x" * 300)
    (path / "model-00002-of-00002.safetensors").write_bytes(b"x" * 200)
    (path / "tokenizer.json").write_bytes(b"y" * 1000)
    facts = model_facts(str(path))
    assert (facts["weights_bytes"], facts["weights_from"], facts["weight_files"]) == (500, "files", 2)


def test_missing_path_and_hub_id():
    missing = model_facts("/nonexistent/volta/model")
    assert (missing["local"], missing["exists"], missing["kind"]) == (True, False, None)
    hub = model_facts("Qwen/Qwen3-8B")
    assert (hub["local"], hub["exists"]) == (False, False)


@pytest.mark.parametrize(
    ("content", "error"),
    [(None, "config.json is missing"), ("{not json", "cannot be read"), ("[1, 2]", "not a JSON object")],
)
def test_config_problems_are_reported(tmp_path, content, error):
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    facts = model_facts(str(tmp_path))
    assert facts["config"] is None
    assert error in facts["config_error"]


def test_tokenizer_max_length(tmp_path):
    path = checkpoint(tmp_path, "Qwen2.5-7B-Instruct")
    (path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 131072}))
    assert model_facts(str(path))["tokenizer_max_length"] == 131072


def test_gguf_file_architecture_and_size(tmp_path):
    path = tmp_path / "DeepSeek-V2-Lite-Chat-Q8_0.gguf"
    shutil.copy(MODELS / path.name, path)
    facts = model_facts(str(path))
    assert (facts["kind"], facts["gguf_architecture"], facts["weights_from"]) == ("file", "deepseek2", "gguf")
    assert facts["weights_bytes"] == path.stat().st_size


def test_gguf_architecture_after_other_keys(tmp_path):
    path = tmp_path / "m.gguf"
    name = b"deepseek-v2"
    path.write_bytes(
        gguf_bytes([
            ("general.alignment", 4, struct.pack("<I", 32)),
            ("general.tags", 9, struct.pack("<IQ", 8, 1) + struct.pack("<Q", 3) + b"abc"),
            ("general.architecture", 8, struct.pack("<Q", len(name)) + name),
        ])
    )
    assert gguf_architecture(str(path)) == ("deepseek-v2", None)


EMPTY_GGUF = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"PK\x03\x04rest", "no GGUF magic"),
        (b"GGUF\x03\x00", "cannot be read"),
        (EMPTY_GGUF, "no general.architecture"),
    ],
)
def test_gguf_problems(tmp_path, data, error):
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    assert error in gguf_architecture(str(path))[1]


def test_split_gguf_parts_are_summed(tmp_path):
    first = tmp_path / "m-00001-of-00002.gguf"
    first.write_bytes((MODELS / "DeepSeek-V2-Lite-Chat-Q8_0.gguf").read_bytes())
    (tmp_path / "m-00002-of-00002.gguf").write_bytes(b"z" * 1000)
    assert split_gguf_parts(str(first))[1].endswith("m-00002-of-00002.gguf")
    facts = model_facts(str(first))
    assert facts["weights_bytes"] == first.stat().st_size + 1000
    assert facts["weight_files"] == 2


def test_gather_reads_each_path_once_and_skips_non_strings(tmp_path):
    facts = gather([str(tmp_path), str(tmp_path), "", None, "org/model"])
    assert list(facts) == [str(tmp_path), "org/model"]


def test_reading_changes_nothing(tmp_path):
    path = checkpoint(tmp_path, "DeepSeek-V2-Lite-Chat")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in path.iterdir())
    model_facts(str(path))
    assert sorted((p.name, p.stat().st_mtime_ns) for p in path.iterdir()) == before
