# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the source patch catalog on file shapes like upstream vLLM's fused_moe.py.

The fixtures are written here (not copied from vLLM): each reproduces only the lines around the
patch sites, in the layouts upstream had before and after PR #34507 and around get_default_config.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._source_patch import (
    CATALOG,
    PatchError,
    plan,
    version_allowed,
)

REPO = Path(__file__).resolve().parents[4]
STANDIN = REPO / "tests" / "lab" / "pypi" / "standins" / "fused_moe.py.in"

KERNEL_HEAD = """
@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, sorted_token_ids_ptr, num_valid_tokens, stride_am, stride_ak,
                     top_k: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(axis=0)
"""
# before PR #34507, single load (older releases)
LOAD_OLD = """    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
"""
# before PR #34507, with naive block assignment
LOAD_NAIVE = """    offs = tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    if not naive_block_assignment:
        offs_token_id = pid_m * BLOCK_SIZE_M + offs
        offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    else:
        offs_token = tl.where(offs == 0, pid_m, num_valid_tokens)
"""
CAST = """    # Cast to int64 to prevent overflow in stride*offset products
    offs_token = offs_token.to(tl.int64)
"""
KERNEL_TAIL = """    token_mask = offs_token < num_valid_tokens
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (
        offs_token[:, None] // top_k * stride_am + offs_k[None, :] * stride_ak
    )
"""
GPTQ_OLD = """

@triton.jit
def fused_moe_kernel_gptq_awq(a_ptr, sorted_token_ids_ptr, num_valid_tokens, stride_am, top_k: tl.constexpr):
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am)
"""
GPTQ_FIXED = GPTQ_OLD.replace("tl.load(sorted_token_ids_ptr + offs_token_id)",
                              "tl.load(sorted_token_ids_ptr + offs_token_id).to(tl.int64)")
CONFIG = """

def get_default_config(M, E, N, K, topk, dtype, block_shape=None):
    block_m = 16 if M <= 32 else 64
    block_n = 64 if M <= 64 else 128
    block_k = 128 if dtype == "fp8_w8a8" or M <= 64 else 64
    return {
        "BLOCK_SIZE_M": block_m,
        "BLOCK_SIZE_N": block_n,
        "BLOCK_SIZE_K": block_k,
    }
"""
CONFIG_OLD = """

def get_default_config(M, E, N, K, topk, dtype, is_marlin):
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    return config
"""
CONFIG_SM70 = CONFIG.replace(
    '    return {\n',
    '    if current_platform.is_device_capability(70):\n        block_k = min(block_k, 64)\n    return {\n')

PRE_FIX_OLD = KERNEL_HEAD + LOAD_OLD + KERNEL_TAIL + GPTQ_OLD + CONFIG
PRE_FIX_NAIVE = KERNEL_HEAD + LOAD_NAIVE + KERNEL_TAIL + GPTQ_OLD + CONFIG
POST_FIX = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG
POST_FIX_OLD_CONFIG = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG_OLD
POST_FIX_SM70 = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG_SM70
HALF_FIXED = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_OLD + CONFIG
UNRELATED = "def fused_experts(x):\n    return x\n"
RENAMED = POST_FIX.replace("token_mask = offs_token < num_valid_tokens", "mask = offs_token < num_valid_tokens")
MOVED_LOAD = PRE_FIX_OLD.replace("    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)\n",
                                 "    offs_token = load_tokens(sorted_token_ids_ptr, offs_token_id)\n", 1)


def standin(int64_fix):
    text = STANDIN.read_text(encoding="utf-8")
    lines = ("    # Cast to int64 to prevent overflow in stride*offset products\n"
             "    offs_token = offs_token.to(tl.int64)\n") if int64_fix else ""
    return text.replace("@INT64_LINES@\n", lines)


INT64 = "fused_moe_int64_offsets"
BLOCK_K = "fused_moe_sm70_block_k"


@pytest.mark.parametrize(
    "name, text, version, result, sites",
    [
        (INT64, PRE_FIX_OLD, "0.10.2", "patched", 2),
        (INT64, PRE_FIX_NAIVE, "0.15.0", "patched", 2),
        (INT64, HALF_FIXED, "0.16.0", "patched", 2),
        (INT64, POST_FIX, "0.19.1", "fixed_upstream", 2),
        (INT64, standin(True), "0.21.0", "fixed_upstream", 1),
        (INT64, standin(False), "0.17.1", "patched", 1),
        (BLOCK_K, POST_FIX, "0.21.0", "patched", 1),
        (BLOCK_K, PRE_FIX_NAIVE, "0.15.0", "patched", 1),
        (BLOCK_K, standin(True), "0.19.1", "patched", 1),
        (BLOCK_K, POST_FIX_SM70, "0.30.0", "fixed_upstream", 0),
    ],
)
def test_present_then_idempotent_then_absent(name, text, version, result, sites):
    first = plan(name, text, "present", {}, "vllm", version, "/x/fused_moe.py")
    assert first["result"] == result
    assert len(first["sites"]) == sites
    assert first["changed"] is (result == "patched")
    second = plan(name, first["text"], "present", {}, "vllm", version, "/x/fused_moe.py")
    expected_again = "already_patched" if result == "patched" else result
    assert (second["result"], second["changed"], second["text"]) == (expected_again, False, first["text"])
    removed = plan(name, first["text"], "absent", {}, "vllm", version, "/x/fused_moe.py")
    assert removed["text"] == text  # exactly the original
    assert removed["result"] == ("removed" if result == "patched" else result if result == "fixed_upstream"
                                 else "already_absent")
    again = plan(name, text, "absent", {}, "vllm", version, "/x/fused_moe.py")
    assert again["changed"] is False


def test_int64_patch_inserts_the_cast_before_every_mask():
    out = plan(INT64, PRE_FIX_NAIVE, dist="vllm", version="0.15.0")["text"]
    cast_then_mask = re.findall(r"offs_token = offs_token\.to\(tl\.int64\)\n.*\n\s*token_mask = ", out)
    assert len(cast_then_mask) == 2
    compile(out, "fused_moe.py", "exec")  # still Python


def test_both_patches_stack_and_compile():
    one = plan(INT64, standin(False), dist="vllm", version="0.17.1")["text"]
    two = plan(BLOCK_K, one, dist="vllm", version="0.17.1")["text"]
    compile(two, "fused_moe.py", "exec")
    assert plan(INT64, two, dist="vllm", version="0.17.1")["result"] == "already_patched"
    assert plan(BLOCK_K, two, dist="vllm", version="0.17.1")["result"] == "already_patched"


def test_block_k_cap_runs(monkeypatch):
    """Execute the patched get_default_config with a fake torch: the cap applies on SM70 only."""
    text = plan(BLOCK_K, CONFIG, params={"block_k": 64})["text"]
    namespace = {}
    exec(compile(text, "cfg", "exec"), namespace)  # noqa: S102  runs the patched text, written by this test

    class Cuda:
        cap = (7, 0)

        @staticmethod
        def is_available():
            return True

        @classmethod
        def get_device_capability(cls):
            return cls.cap

    fake = type("torch", (), {"cuda": Cuda})
    monkeypatch.setitem(__import__("sys").modules, "torch", fake)
    get = namespace["get_default_config"]
    assert get(16, 8, 1, 1, 2, None)["BLOCK_SIZE_K"] == 64
    monkeypatch.setenv("VOLTA_SERVING_MOE_BLOCK_K_SM70", "32")
    assert get(16, 8, 1, 1, 2, None)["BLOCK_SIZE_K"] == 32
    monkeypatch.setenv("VOLTA_SERVING_MOE_BLOCK_K_SM70", "0")
    assert get(16, 8, 1, 1, 2, None)["BLOCK_SIZE_K"] == 128
    monkeypatch.delenv("VOLTA_SERVING_MOE_BLOCK_K_SM70")
    Cuda.cap = (8, 0)
    assert get(16, 8, 1, 1, 2, None)["BLOCK_SIZE_K"] == 128


def test_block_k_param_change_updates_the_block():
    first = plan(BLOCK_K, CONFIG, params={"block_k": 64})["text"]
    second = plan(BLOCK_K, first, params={"block_k": 32})
    assert second["result"] == "patched" and '"32"' in second["text"] and '"64"' not in second["text"]
    assert plan(BLOCK_K, second["text"], "absent")["text"] == CONFIG


@pytest.mark.parametrize(
    "name, text, message",
    [
        (INT64, UNRELATED, "unrecognised file shape"),
        (INT64, RENAMED, "unrecognised file shape"),
        (INT64, MOVED_LOAD, "unrecognised shape at line"),
        (BLOCK_K, POST_FIX_OLD_CONFIG, "unrecognised file shape"),
        (BLOCK_K, UNRELATED, "unrecognised file shape"),
    ],
)
def test_unrecognised_shapes_fail_with_file_version_and_patch(name, text, message):
    with pytest.raises(PatchError) as exc:
        plan(name, text, "present", {}, "vllm", "0.99.0", "/opt/x/fused_moe.py")
    assert message in str(exc.value)
    for part in (name, "/opt/x/fused_moe.py", "vllm 0.99.0"):
        assert part in str(exc.value)


def test_hand_edited_block_fails():
    patched = plan(INT64, PRE_FIX_OLD)["text"]
    broken = patched.replace("# <<< volta.serving: fused_moe_int64_offsets", "", 1)
    with pytest.raises(PatchError, match=r"never ends|edited"):
        plan(INT64, broken)


def test_version_gate():
    with pytest.raises(PatchError, match=r"refusing to patch: vllm 0\.5\.0 is outside"):
        plan(INT64, PRE_FIX_OLD, dist="vllm", version="0.5.0", path="/f")
    # an upstream-fixed file is fine at any version
    assert plan(INT64, POST_FIX, dist="vllm", version="0.5.0")["result"] == "fixed_upstream"
    assert version_allowed(INT64, "1cat_vllm", "1.5.1") == (True, "")
    assert version_allowed(INT64, "sglang", "1.0")[0] is False
    assert version_allowed(INT64, None, None)[0] is True


def test_catalog_entries_are_complete():
    keys = {"description", "target", "applies_to", "file_requires", "fixed_upstream_file", "anchor", "position",
            "window", "site_fixed_upstream", "site_unpatched", "insert"}
    for name, patch in CATALOG.items():
        assert set(patch) == keys, name
        assert patch["insert"][0].startswith(f"{{indent}}# >>> volta.serving: {name}")
        assert patch["insert"][-1] == f"{{indent}}# <<< volta.serving: {name}"
