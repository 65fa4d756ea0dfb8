# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a local model path holds: config.json, the weights' size, a GGUF header's architecture.

Pure Python, no Ansible imports (the module volta.serving.model_facts is a thin wrapper), so
unit tests call it on directories they write. Read-only: it opens files for reading and lists
directories, nothing else. Private to the collection: no compatibility promise outside it.

The weights' size comes, in this order, from ``metadata.total_size`` of a sharded checkpoint's
index (``model.safetensors.index.json``, or ``pytorch_model.bin.index.json``), or else from the
sum of the weight files' sizes (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``, ``*.gguf``) in
the directory. A ``.gguf`` path is one file (or the first of a split GGUF, whose parts are summed).
"""

from __future__ import annotations

import json
import os
import re
import struct

INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
CONFIG_FILE = "config.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
CONFIG_MAX_BYTES = 4 * 1024 * 1024  # a config.json is a few KB; refuse to read a huge one
GGUF_MAGIC = b"GGUF"
GGUF_MAX_KEYS = 64  # general.architecture is among the first keys llama.cpp's writer emits
_SPLIT_GGUF_RE = re.compile(r"^(?P<stem>.*)-(?P<part>\d{5})-of-(?P<count>\d{5})\.gguf$")

# GGUF metadata value types (GGUF specification, ggml docs/gguf.md): type id -> struct format.
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING = 8
_GGUF_ARRAY = 9


def empty_facts(path):
    """Every key of one model's facts, as for a path that was not looked at."""
    return {
        "path": path,
        "local": isinstance(path, str) and path.startswith("/"),
        "exists": False,
        "kind": None,
        "config": None,
        "config_error": None,
        "tokenizer_max_length": None,
        "weights_bytes": None,
        "weights_from": None,
        "weight_files": 0,
        "gguf_architecture": None,
        "gguf_error": None,
        "read_from": None,
        "hub_error": None,
        "pending": False,
    }


def model_facts(path):
    """The facts of one model path; a path that is not absolute (a hub id) is only marked not local."""
    facts = empty_facts(path)
    if not facts["local"]:
        return facts
    facts["read_from"] = "host"
    if os.path.isdir(path):
        facts.update(exists=True, kind="directory")
        _read_directory(path, facts)
    elif os.path.isfile(path):
        facts.update(exists=True, kind="file")
        _read_file(path, facts)
    elif os.path.lexists(path):
        facts.update(exists=True, kind="other")
    return facts


def _read_json(path):
    """``(data, error)`` for a JSON file; ``(None, None)`` when it does not exist."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return None, None
    if size > CONFIG_MAX_BYTES:
        return None, f"{os.path.basename(path)} is {size} bytes, more than a model configuration holds"
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle), None
    except (OSError, ValueError) as exc:
        return None, f"{os.path.basename(path)} cannot be read: {exc}"


def _read_directory(path, facts):
    config, error = _read_json(os.path.join(path, CONFIG_FILE))
    if error is None and config is not None and not isinstance(config, dict):
        error = f"{CONFIG_FILE} is not a JSON object"
    facts["config"] = config if isinstance(config, dict) else None
    facts["config_error"] = error
    if error is None and config is None:
        facts["config_error"] = f"{CONFIG_FILE} is missing"
    tokenizer, _error = _read_json(os.path.join(path, TOKENIZER_CONFIG_FILE))
    length = tokenizer.get("model_max_length") if isinstance(tokenizer, dict) else None
    facts["tokenizer_max_length"] = length if isinstance(length, int) and not isinstance(length, bool) else None
    _directory_weights(path, facts)


def _index_total(path):
    """metadata.total_size of the first index file that has one, and the index's name."""
    for name in INDEX_FILES:
        index, _error = _read_json(os.path.join(path, name))
        total = (index or {}).get("metadata", {}).get("total_size") if isinstance(index, dict) else None
        if isinstance(total, (int, float)) and not isinstance(total, bool) and total > 0:
            return int(total), name
    return None, None


def _directory_weights(path, facts):
    total, name = _index_total(path)
    files = []
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        entries = []
    for entry in entries:
        full = os.path.join(path, entry)
        if entry.endswith(WEIGHT_SUFFIXES) and os.path.isfile(full):
            files.append(full)
    facts["weight_files"] = len(files)
    if total is not None:
        facts.update(weights_bytes=total, weights_from=name)
    elif files:
        facts.update(weights_bytes=sum(os.path.getsize(f) for f in files), weights_from="files")
    ggufs = [f for f in files if f.endswith(".gguf")]
    if ggufs:
        facts["gguf_architecture"], facts["gguf_error"] = gguf_architecture(ggufs[0])


def _read_file(path, facts):
    if not path.endswith(".gguf"):
        facts.update(weights_bytes=os.path.getsize(path), weights_from="file", weight_files=1)
        return
    parts = split_gguf_parts(path)
    present = [p for p in parts if os.path.isfile(p)]
    facts.update(weights_bytes=sum(os.path.getsize(p) for p in present), weights_from="gguf", weight_files=len(present))
    facts["gguf_architecture"], facts["gguf_error"] = gguf_architecture(path)


def split_gguf_parts(path):
    """The files of a split GGUF (``x-00001-of-00003.gguf`` -> its three parts), else ``[path]``."""
    match = _SPLIT_GGUF_RE.match(path)
    if not match:
        return [path]
    count = int(match.group("count"))
    return [f"{match.group('stem')}-{part:05d}-of-{count:05d}.gguf" for part in range(1, count + 1)]


class _GgufReader:
    def __init__(self, handle):
        self.handle = handle

    def take(self, fmt):
        size = struct.calcsize(fmt)
        data = self.handle.read(size)
        if len(data) != size:
            raise ValueError("the file ends inside its header")
        return struct.unpack(fmt, data)[0]

    def string(self):
        length = self.take("<Q")
        if length > 1 << 20:
            raise ValueError(f"a header string of {length} bytes")
        data = self.handle.read(length)
        if len(data) != length:
            raise ValueError("the file ends inside its header")
        return data.decode("utf-8", "replace")

    def skip_value(self, kind):
        if kind in _GGUF_SCALARS:
            self.take(_GGUF_SCALARS[kind])
        elif kind == _GGUF_STRING:
            self.string()
        elif kind == _GGUF_ARRAY:
            inner, count = self.take("<I"), self.take("<Q")
            for _index in range(count):
                self.skip_value(inner)
        else:
            raise ValueError(f"unknown metadata value type {kind}")


def gguf_architecture(path):
    """``(architecture, error)`` from a GGUF file's header (``general.architecture``); reads a few KB."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != GGUF_MAGIC:
                return None, "not a GGUF file (no GGUF magic)"
            reader = _GgufReader(handle)
            version = reader.take("<I")
            if version < 2:
                return None, f"GGUF version {version} is too old to read"
            reader.take("<Q")  # tensor count
            keys = reader.take("<Q")
            for _index in range(min(keys, GGUF_MAX_KEYS)):
                key, kind = reader.string(), reader.take("<I")
                if key == "general.architecture" and kind == _GGUF_STRING:
                    return reader.string(), None
                reader.skip_value(kind)
    except (OSError, ValueError, struct.error) as exc:
        return None, f"GGUF header cannot be read: {exc}"
    return None, "no general.architecture in the GGUF header"


def gather(paths):
    """Facts for every distinct path in *paths*, keyed by path (non-strings are left out)."""
    return {path: model_facts(path) for path in dict.fromkeys(p for p in paths if isinstance(p, str) and p)}
