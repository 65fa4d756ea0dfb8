"""The lab hub's repositories: tiny model repositories generated in memory (stdlib only).

A stand-in for models on the Hugging Face Hub, a few MB each, with what the real hub
publishes about them: git blob ids (sha1 of ``blob <size>\\0<content>``), LFS pointers for
``*.safetensors`` (``oid sha256:<hex>``, ``size <n>``), the LFS sha256 and size, and
commit ids. Everything is derived from fixed seeds, so the same repository always has the
same commits and checksums (tests pin revisions by value).

Repositories (``REPOS``):
  volta-lab/tiny-llama   two commits (the second changes config.json and the weights), a
                         branch ``main`` at the second; a LlamaForCausalLM-shaped config
  volta-lab/tiny-gated   one commit; gated: a valid token is needed (``LAB_TOKEN``)
  volta-lab/tiny-gguf    one commit: the tiny GGUF model that tests/lab/hub/build writes with the real
                         gguf package (tinygguf.py), when it was built (``build_repos(gguf=...)``)
  volta-lab/<NAME>       one commit per checkpoint of tests/fixtures/models (config.json and the index
                         with the real total_size, no weights; copied by tests/lab/hub/build), e.g.
                         volta-lab/Qwen2.5-72B-Instruct (``build_repos(checkpoints=...)``)
"""

from __future__ import annotations

import hashlib
import json
import random
import struct

# The only token the lab hub accepts for gated repositories (a lab value, never a real one).
LAB_TOKEN = "hf_voltaLabStandInToken0000000000000"  # noqa: S105  a lab value, never a real one
GGUF_REPO, GGUF_FILE = "volta-lab/tiny-gguf", "tiny-llama.gguf"
LFS_SUFFIXES = (".safetensors", ".bin", ".gguf")
GITATTRIBUTES = "*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.gguf filter=lfs diff=lfs merge=lfs -text\n"


def git_blob_id(content: bytes) -> str:
    """Git's object id of a blob, as the hub reports it for every file (``oid``/``blobId``)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # noqa: S324  git's format


def lfs_pointer(content: bytes) -> bytes:
    """The git-lfs pointer stored in git for an LFS file (spec v1)."""
    digest = hashlib.sha256(content).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{digest}\nsize {len(content)}\n".encode()


def safetensors(tensors: dict[str, tuple[list[int], int]]) -> bytes:
    """A valid safetensors file of F16 tensors: name -> (shape, seed); 8-byte header length + JSON + data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (shape, seed) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        data = random.Random(seed).randbytes(count * 2)  # noqa: S311  test weights, not secrets
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(blobs)


def _config(hidden: int, layers: int, version: str) -> bytes:
    return json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
        "intermediate_size": hidden * 2, "num_attention_heads": 8, "num_key_value_heads": 4,
        "num_hidden_layers": layers, "max_position_embeddings": 4096, "vocab_size": 256,
        "torch_dtype": "float16", "rms_norm_eps": 1e-5, "volta_lab_revision": version,
    }, indent=2).encode() + b"\n"


def _tokenizer() -> dict[str, bytes]:
    vocab = {chr(c): c - 32 for c in range(32, 127)}
    tok = {"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": []}, "added_tokens": []}
    return {
        "tokenizer.json": json.dumps(tok).encode(),
        "tokenizer_config.json": json.dumps(
            {"model_max_length": 4096, "tokenizer_class": "PreTrainedTokenizerFast"}).encode(),
    }


def _weights(hidden: int, layers: int, seed: int) -> dict[str, bytes]:
    """Two shards and their index, like a real multi-file checkpoint."""
    names = {f"model.layers.{i}.mlp.up_proj.weight": ([hidden * 2, hidden], seed + i) for i in range(layers)}
    half = layers // 2
    shards = {
        "model-00001-of-00002.safetensors": dict(list(names.items())[:half]),
        "model-00002-of-00002.safetensors": dict(list(names.items())[half:]),
    }
    out = {path: safetensors(tensors) for path, tensors in shards.items()}
    index = {"metadata": {"total_size": sum(len(b) for b in out.values())},
             "weight_map": {t: path for path, tensors in shards.items() for t in tensors}}
    out["model.safetensors.index.json"] = json.dumps(index, indent=2).encode()
    return out


def _snapshot(hidden: int, layers: int, seed: int, version: str) -> dict[str, bytes]:
    files = {".gitattributes": GITATTRIBUTES.encode(), "README.md": f"# tiny lab model {version}\n".encode(),
             "config.json": _config(hidden, layers, version),
             "generation_config.json": b'{"bos_token_id": 1, "eos_token_id": 2}\n'}
    files.update(_tokenizer())
    files.update(_weights(hidden, layers, seed))
    return files


def _commit_id(repo: str, parent: str | None, files: dict[str, bytes]) -> str:
    tree = "".join(f"{p} {git_blob_id(c)}\n" for p, c in sorted(files.items()))
    return hashlib.sha1(f"{repo}\n{parent}\n{tree}".encode()).hexdigest()  # noqa: S324  an id, not security


class Repo:
    """A repository: ordered commits (oldest first), each a snapshot {path: content}; refs name commits."""

    def __init__(self, repo_id: str, snapshots: list[tuple[str, dict[str, bytes]]], gated: bool = False):
        self.repo_id, self.gated, self.commits, parent = repo_id, gated, [], None
        for title, files in snapshots:
            oid = _commit_id(repo_id, parent, files)
            self.commits.append({"oid": oid, "title": title, "files": files})
            parent = oid
        self.refs = {"main": self.commits[-1]["oid"]}

    def resolve(self, revision: str):
        """The commit a revision (branch or full commit id) names, or None."""
        oid = self.refs.get(revision, revision)
        return next((c for c in self.commits if c["oid"] == oid), None)


def entry(path: str, content: bytes) -> dict:
    """What the hub publishes about one file: the tree API's entry (type, oid, size, path, lfs)."""
    if path.endswith(LFS_SUFFIXES):
        pointer = lfs_pointer(content)
        return {"type": "file", "oid": git_blob_id(pointer), "size": len(content), "path": path,
                "lfs": {"oid": hashlib.sha256(content).hexdigest(), "size": len(content),
                        "pointerSize": len(pointer)}}
    return {"type": "file", "oid": git_blob_id(content), "size": len(content), "path": path}


def _gguf_snapshot(gguf: bytes) -> dict[str, bytes]:
    return {".gitattributes": GITATTRIBUTES.encode(),
            "README.md": b"# tiny lab GGUF (llama architecture, random weights; tests/lab/hub/tinygguf.py)\n",
            GGUF_FILE: gguf}


def build_repos(gguf: bytes | None = None, checkpoints: dict[str, dict[str, bytes]] | None = None) -> dict[str, Repo]:
    """The lab's repositories; volta-lab/tiny-gguf when the GGUF's bytes are given, and one repository
    volta-lab/NAME per checkpoint {NAME: {path: content}} (a README and .gitattributes added)."""
    extra = {GGUF_REPO: Repo(GGUF_REPO, [("Tiny GGUF", _gguf_snapshot(gguf))])} if gguf else {}
    for name, files in sorted((checkpoints or {}).items()):
        snapshot = {".gitattributes": GITATTRIBUTES.encode(),
                    "README.md": f"# {name} (tests/fixtures/models: config and index, no weights)\n".encode(), **files}
        extra[f"volta-lab/{name}"] = Repo(f"volta-lab/{name}", [("Checkpoint without weights", snapshot)])
    return {
        "volta-lab/tiny-llama": Repo("volta-lab/tiny-llama", [
            ("Initial tiny model", _snapshot(512, 4, 1000, "r1")),
            ("Retrained weights", _snapshot(512, 4, 2000, "r2")),
        ]),
        "volta-lab/tiny-gated": Repo("volta-lab/tiny-gated", [("Gated tiny model", _snapshot(256, 2, 3000, "g1"))],
                                     gated=True),
    } | extra
