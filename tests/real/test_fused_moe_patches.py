"""volta.serving.source_patch on the real fused_moe.py of each vLLM release it meets.

Before vLLM PR #34507 (0.15.1, 0.16.0) the int64 cast is applied to both Triton MoE kernels; from
0.17.0 the file has the cast (``fixed_upstream``). The SM70 BLOCK_SIZE_K cap applies from 0.17.0
(the first release whose default config picks a K tile of 128) up to the newest release; before that
there is nothing to cap (``not_needed``). A patched file compiles, a rerun changes nothing, and
``state=absent`` gives back the release's file byte for byte.

The files come from the release's sdist (small) where the index has one; 0.15.1 has none, so its wheel
is read.
"""

from __future__ import annotations

import functools
import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.module_utils._source_patch import FUSED_MOE, plan
from ansible_collections.volta.serving.plugins.modules import source_patch
from artifacts import fetch, member

INT64 = "fused_moe_int64_offsets"
BLOCK_K = "fused_moe_sm70_block_k"
NEWEST = "0.33.0"  # the newest vLLM on the index when this was written (2026-11-30)
WHEEL_ONLY = {"0.15.1"}  # no sdist on the index

# (release, patch, result with state=present, number of patch sites)
EXPECTED = [
    ("0.15.1", INT64, "patched", 2),
    ("0.15.1", BLOCK_K, "not_needed", 0),
    ("0.16.0", INT64, "patched", 2),
    ("0.16.0", BLOCK_K, "not_needed", 0),
    ("0.17.0", INT64, "fixed_upstream", 2),
    ("0.17.0", BLOCK_K, "patched", 1),
    ("0.19.1", INT64, "fixed_upstream", 2),
    ("0.19.1", BLOCK_K, "patched", 1),
    ("0.21.0", INT64, "fixed_upstream", 2),
    ("0.21.0", BLOCK_K, "patched", 1),
    (NEWEST, INT64, "fixed_upstream", 2),
    (NEWEST, BLOCK_K, "patched", 1),
]


@functools.cache
def real_fused_moe(version):
    dist = fetch("vllm", version, kind="wheel" if version in WHEEL_ONLY else "sdist")
    return member(dist, FUSED_MOE)


@pytest.mark.parametrize("version, name, result, sites", EXPECTED)
def test_patch_on_the_real_file(version, name, result, sites):
    original = real_fused_moe(version)
    text = original.decode("utf-8")
    where = f"vllm-{version}/{FUSED_MOE}"
    first = plan(name, text, "present", {"block_k": 64}, "vllm", version, where)
    assert (first["result"], len(first["sites"])) == (result, sites), first["message"]
    if result != "patched":
        assert first["changed"] is False and first["text"] == text
        assert plan(name, text, "absent", {}, "vllm", version, where)["result"] == result
        return
    assert first["message"].endswith(f"applied at {sites} of {sites} site(s) "
                                     f"(line(s) {', '.join(map(str, first['sites']))})")
    assert first["text"].count(f"# >>> volta.serving: {name}") == sites
    compile(first["text"], where, "exec")
    again = plan(name, first["text"], "present", {"block_k": 64}, "vllm", version, where)
    assert (again["result"], again["changed"], again["text"]) == ("already_patched", False, first["text"])
    removed = plan(name, first["text"], "absent", {}, "vllm", version, where)
    assert removed["result"] == "removed"
    assert removed["text"].encode("utf-8") == original  # byte for byte


def test_int64_cast_lands_after_the_naive_block_assignment_branch():
    """0.16.0's fused_moe_kernel sets offs_token in an if/else (the else a multi-line tl.where): the cast
    goes after the whole block, at the kernel's indentation, right before token_mask."""
    text = plan(INT64, real_fused_moe("0.16.0").decode("utf-8"), dist="vllm", version="0.16.0")["text"]
    lines = text.split("\n")
    casts = [i for i, line in enumerate(lines) if line == "    offs_token = offs_token.to(tl.int64)"]
    assert len(casts) == 2
    for i in casts:
        assert lines[i + 2] == "    token_mask = offs_token < num_valid_tokens"
    assert lines[casts[1] - 3].strip() == ")"  # the end of the tl.where( ... ) above


def _module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        source_patch.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("version, name", [("0.16.0", INT64), ("0.21.0", BLOCK_K)])
def test_module_end_to_end_on_a_copy(capsys, tmp_path, version, name):
    original = real_fused_moe(version)
    target = tmp_path / "fused_moe.py"
    target.write_bytes(original)
    args = {"name": name, "path": str(target), "python": str(tmp_path / "no-venv"), "engine_version": version}
    rc, out = _module(capsys, args)
    assert (rc, out["result"], out["changed"], out["version"]) == (0, "patched", True, version)
    compile(target.read_bytes(), str(target), "exec")
    rc, out = _module(capsys, args)
    assert (rc, out["result"], out["changed"]) == (0, "already_patched", False)
    rc, out = _module(capsys, {**args, "state": "absent"})
    assert (rc, out["result"], out["changed"]) == (0, "removed", True)
    assert target.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["fused_moe.py"]  # no temporary file left
