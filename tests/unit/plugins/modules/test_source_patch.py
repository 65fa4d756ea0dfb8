# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.source_patch end to end: main() on a file in a fake engine venv."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import source_patch

REPO = Path(__file__).resolve().parents[4]
STANDIN = REPO / "tests" / "lab" / "pypi" / "standins" / "fused_moe.py.in"
CAST = "    # Cast to int64 to prevent overflow in stride*offset products\n    offs_token = offs_token.to(tl.int64)\n"


@pytest.fixture
def engine(tmp_path):
    """A venv whose python reports that vllm <version> owns site-packages/vllm/.../fused_moe.py."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    target = site / "vllm" / "model_executor" / "layers" / "fused_moe" / "fused_moe.py"
    target.parent.mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)

    def make(version, int64_fix):
        text = STANDIN.read_text(encoding="utf-8").replace("@INT64_LINES@\n", CAST if int64_fix else "")
        target.write_text(text)
        target.chmod(0o644)
        answer = json.dumps({"path": str(target), "dist": "vllm", "version": version})
        python.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n")
        python.chmod(0o755)
        return str(python), target, text

    return make


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        source_patch.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "name, version, int64_fix, result",
    [
        ("fused_moe_int64_offsets", "0.21.0", True, "fixed_upstream"),
        ("fused_moe_int64_offsets", "0.17.1", False, "patched"),
        ("fused_moe_sm70_block_k", "0.21.0", True, "patched"),
    ],
)
def test_apply_then_rerun(capsys, engine, name, version, int64_fix, result):
    python, target, original = engine(version, int64_fix)
    rc, out = run(capsys, {"name": name, "python": python, "_ansible_diff": True})
    assert rc == 0 and out["result"] == result and out["changed"] is (result == "patched")
    assert out["path"] == str(target) and out["version"] == version and out["distribution"] == "vllm"
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
    python, target, original = engine("0.21.0", True)
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python, "_ansible_check_mode": True})
    assert rc == 0 and out["changed"] is True and out["result"] == "patched"
    assert target.read_text() == original
    assert not [p for p in os.listdir(target.parent) if p.startswith(".volta-patch-")]


def test_unrecognised_shape_fails_and_leaves_file(capsys, engine):
    python, target, _site = engine("0.21.0", True)
    target.write_text("def something_else():\n    pass\n")
    rc, out = run(capsys, {"name": "fused_moe_sm70_block_k", "python": python})
    assert rc == 1
    for part in ("fused_moe_sm70_block_k", str(target), "vllm 0.21.0", "unrecognised"):
        assert part in out["msg"]
    assert target.read_text() == "def something_else():\n    pass\n"


def test_explicit_path_without_venv(capsys, tmp_path):
    target = tmp_path / "fused_moe.py"
    target.write_text(STANDIN.read_text(encoding="utf-8").replace("@INT64_LINES@\n", ""))
    rc, out = run(capsys, {"name": "fused_moe_int64_offsets", "path": str(target), "python": str(tmp_path / "none"),
                           "engine_version": "0.17.1"})
    assert rc == 0 and out["result"] == "patched" and out["version"] == "0.17.1"


def test_missing_target(capsys, tmp_path):
    rc, out = run(capsys, {"name": "fused_moe_int64_offsets", "python": str(tmp_path / "none")})
    assert rc == 1 and "set path" in out["msg"]
