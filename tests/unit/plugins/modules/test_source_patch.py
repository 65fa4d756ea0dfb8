# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.source_patch end to end: main() on a file in a fake engine venv."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import source_patch

REPO = Path(__file__).resolve().parents[4]


def standin(shape, dist="vllm", version="0.17.1"):
    """The lab's stand-in fused_moe.py of *shape* (pre, fixed, 1cat), rendered by tests/lab/pypi/build."""
    loader = importlib.machinery.SourceFileLoader("volta_lab_pypi_build", str(REPO / "tests/lab/pypi/build"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module.fused_moe_standin(dist, version, shape)


@pytest.fixture
def engine(tmp_path):
    """A venv whose python reports that vllm <version> owns site-packages/vllm/.../fused_moe.py."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    target = site / "vllm" / "model_executor" / "layers" / "fused_moe" / "fused_moe.py"
    target.parent.mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)

    def make(version, shape, dist="vllm"):
        text = standin(shape, dist, version)
        target.write_text(text)
        target.chmod(0o644)
        answer = json.dumps({"path": str(target), "dist": dist, "version": version})
        python.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n")
        python.chmod(0o755)
        return str(python), target, text

    return make


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        source_patch.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "name, dist, version, shape, result",
    [
        ("fused_moe_int64_offsets", "vllm", "0.21.0", "fixed", "fixed_upstream"),
        ("fused_moe_int64_offsets", "vllm", "0.17.1", "pre", "patched"),
        ("fused_moe_sm70_block_k", "vllm", "0.21.0", "fixed", "patched"),
        ("fused_moe_sm70_block_k", "vllm", "0.17.1", "pre", "not_needed"),
        ("fused_moe_sm70_block_k", "1cat_vllm", "1.5.1", "1cat", "fixed_upstream"),
    ],
)
def test_apply_then_rerun(capsys, engine, name, dist, version, shape, result):
    python, target, original = engine(version, shape, dist)
    rc, out = run(capsys, {"name": name, "python": python, "_ansible_diff": True})
    assert rc == 0 and out["result"] == result and out["changed"] is (result == "patched")
    assert out["path"] == str(target) and out["version"] == version and out["distribution"] == dist
    if result == "patched":
        assert out["diff"]["before"] == original and out["diff"]["after"] == target.read_text()
        assert oct(target.stat().st_mode & 0o777) == "0o644"
    else:
        assert target.read_text() == original
    rc, again = run(capsys, {"name": name, "python": python})
    assert again["changed"] is False and again["result"] == ("already_patched" if result == "patched" else result)
    rc, removed = run(capsys, {"name": name, "python": python, "state": "absent"})
    assert target.read_text() == original
    assert removed["changed"] is (result == "patched")


def test_check_mode_changes_nothing(capsys, engine):
    python, target, original = engine("0.21.0", "fixed")
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python, "_ansible_check_mode": True})
    assert rc == 0 and out["changed"] is True and out["result"] == "patched"
    assert target.read_text() == original
    assert not [p for p in os.listdir(target.parent) if p.startswith(".volta-patch-")]


def test_unrecognised_shape_fails_and_leaves_file(capsys, engine):
    python, target, _site = engine("0.21.0", "fixed")
    target.write_text("def something_else():\n    pass\n")
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python})
    assert rc == 1
    for part in ("fused_moe_sm70_block_k", str(target), "vllm 0.21.0", "unrecognised"):
        assert part in out["msg"]
    assert target.read_text() == "def something_else():\n    pass\n"


def test_explicit_path_without_venv(capsys, tmp_path):
    target = tmp_path / "fused_moe.py"
    target.write_text(standin("pre"))
    rc, out = run(capsys, {"name": "fused_moe_int64_offsets", "path": str(target), "python": str(tmp_path / "none"),
                           "engine_version": "0.17.1"})
    assert rc == 0 and out["result"] == "patched" and out["version"] == "0.17.1"


def test_missing_target(capsys, tmp_path):
    rc, out = run(capsys, {"name": "fused_moe_int64_offsets", "python": str(tmp_path / "none")})
    assert rc == 1 and "set path" in out["msg"]


def test_binary_file_is_named(capsys, engine):
    python, target, _text = engine("0.21.0", "fixed")
    target.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe")
    rc, out = run(capsys, {"name": "fused_moe_int64_offsets", "python": python})
    assert rc == 1
    assert out["msg"] == (f"patch fused_moe_int64_offsets: {target} (vllm 0.21.0) is not UTF-8 text (byte 8: "
                          "invalid start byte), so it is not the Python file "
                          "vllm/model_executor/layers/fused_moe/fused_moe.py; point path at that file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_write_error_is_clear(capsys, engine):
    python, target, original = engine("0.21.0", "fixed")
    target.parent.chmod(0o555)
    try:
        rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python})
    finally:
        target.parent.chmod(0o755)
    assert rc == 1
    assert out["msg"].startswith(f"patch fused_moe_sm70_block_k: cannot write {target} (vllm 0.21.0): ")
    assert "Permission denied" in out["msg"] and "the file is unchanged" in out["msg"]
    assert target.read_text() == original


def test_write_error_is_clear_when_the_temporary_file_fails(capsys, engine, monkeypatch):
    python, target, original = engine("0.21.0", "fixed")

    def no_space(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(source_patch.tempfile, "mkstemp", no_space)
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python})
    assert rc == 1
    assert out["msg"].startswith(f"patch fused_moe_sm70_block_k: cannot write {target} (vllm 0.21.0): "
                                 "[Errno 28] No space left on device; the file is unchanged. ")
    assert target.read_text() == original


@pytest.mark.parametrize("block_k", [0, -32])
def test_non_positive_block_k_is_refused(capsys, engine, block_k):
    python, target, original = engine("0.21.0", "fixed")
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python, "block_k": block_k})
    assert rc == 1
    assert out["msg"].startswith(f"patch fused_moe_sm70_block_k: block_k must be a power of two of at least 16 "
                                 f"(Triton's tl.arange needs a power of two and tl.dot a K tile of 16 or more), "
                                 f"got {block_k}; ")
    assert target.read_text() == original
