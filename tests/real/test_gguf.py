# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's tiny GGUF (tests/lab/hub/tinygguf.py) against the real gguf 0.19.0 and llama.cpp sources.

The GGUF is written here with the real gguf, numpy and PyYAML wheels of tests/lab/hub/gguf.txt
(extracted, not installed), read back with the real gguf reader, and checked against the llama.cpp
tree that llama-cpp-python 0.3.36 vendors (the tree molecule/engine_llamacpp builds llama-server from):
every metadata key and tensor name it writes is one llama.cpp knows, and the file is byte for byte
the one the inventories pin (sha256 in inventories/sim and molecule/engine_llamacpp).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from artifacts import fetch, member

REPO = Path(__file__).resolve().parents[2]
HUB = REPO / "tests" / "lab" / "hub"
PINS = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) ", (HUB / "gguf.txt").read_text(), re.M))
LLAMA_CPP = ("llama_cpp_python", "0.3.36")
READ = r"""
import json, sys
from gguf import GGUFReader
r = GGUFReader(sys.argv[1])
print(json.dumps({"keys": [f.name for f in r.fields.values()], "tensors": {t.name: t.shape.tolist() for t in r.tensors},
                  "arch": bytes(r.fields["general.architecture"].parts[-1]).decode()}))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A directory holding the real gguf, numpy and PyYAML wheels, extracted (for this Python)."""
    out = tmp_path_factory.mktemp("gguf-site")
    for project in ("gguf", "numpy", "PyYAML"):
        with zipfile.ZipFile(fetch(project, PINS[project])) as whl:
            whl.extractall(out)
    return out


@pytest.fixture(scope="module")
def written(site, tmp_path_factory):
    """(path of the GGUF tinygguf.py writes, what the real reader reads from it)."""
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"
    env = dict(os.environ, PYTHONPATH=str(site))
    subprocess.run([sys.executable, str(HUB / "tinygguf.py"), str(path)], env=env, check=True, timeout=120)
    read = subprocess.run([sys.executable, "-c", READ, str(path)], env=env, check=True, capture_output=True,
                          text=True, timeout=120)
    return path, json.loads(read.stdout)


@pytest.fixture(scope="module")
def llama_cpp():
    return fetch(*LLAMA_CPP, kind="sdist")


def test_the_pinned_gguf_is_the_one_the_llama_cpp_tree_carries(llama_cpp):
    pyproject = member(llama_cpp, "vendor/llama.cpp/gguf-py/pyproject.toml").decode()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == PINS["gguf"]


def test_every_key_written_is_one_llama_cpp_reads(written, llama_cpp):
    arch_cpp = member(llama_cpp, "vendor/llama.cpp/src/llama-arch.cpp").decode()
    _path, read = written
    assert read["arch"] == "llama" and re.search(r'LLM_ARCH_LLAMA,\s*"llama"', arch_cpp)
    keys = [k for k in read["keys"] if not k.startswith("GGUF.")]
    unknown = [k for k in keys if f'"{k.replace("llama.", "%s.", 1)}"' not in arch_cpp]
    assert unknown == []
    # What llama.cpp refuses a file without (llama-model.cpp / llama-vocab.cpp), all present.
    for key in ("llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
                "llama.attention.head_count", "llama.attention.layer_norm_rms_epsilon", "tokenizer.ggml.model",
                "tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        assert key in keys, key


def test_every_tensor_is_one_of_the_llama_architecture(written, llama_cpp):
    arch_cpp = member(llama_cpp, "vendor/llama.cpp/src/llama-arch.cpp").decode()
    _path, read = written
    names = {re.sub(r"^blk\.\d+\.", "blk.%d.", n).removesuffix(".weight") for n in read["tensors"]}
    assert sorted(n for n in names if f'"{n}"' not in arch_cpp) == []
    assert read["tensors"]["token_embd.weight"] == [64, 272]  # GGUF order: n_embd, n_vocab


def test_a_bpe_vocabulary_without_merges_is_refused_by_llama_cpp(llama_cpp):
    # Why the generator writes merges: llama.cpp 0.3.36's loader refuses a "gpt2" vocabulary without them.
    vocab_cpp = member(llama_cpp, "vendor/llama.cpp/src/llama-vocab.cpp").decode()
    assert "cannot find tokenizer merges in model file" in vocab_cpp


def test_the_file_is_the_one_the_inventories_pin(written):
    path, _read = written
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    lab = yaml.safe_load((REPO / "inventories" / "sim" / "group_vars" / "volta" / "lab.yml").read_text())
    scenario = yaml.safe_load((REPO / "molecule" / "engine_llamacpp" / "molecule.yml").read_text())
    scenario_models = scenario["provisioner"]["inventory"]["group_vars"]["all"]["volta_models"]
    assert digest == lab["volta_models"]["deepseek-v2-lite-gguf"]["sha256"]
    assert digest == scenario_models["tiny-gguf"]["sha256"]
