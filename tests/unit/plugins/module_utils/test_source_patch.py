# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the source patch catalog on file shapes like the real fused_moe.py.

The fixtures are written here (not copied from vLLM): each reproduces only the lines around the
patch sites, in the layouts the real files have (recorded from vLLM 0.6.4 ... 0.33.0 and 1Cat-vLLM
v1.1.0 ... v1.3.0; tests/real/test_fused_moe_patches.py runs the catalog on the real files).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._source_patch import (
    CATALOG,
    PatchError,
    plan,
    previous_statement,
    version_allowed,
)

REPO = Path(__file__).resolve().parents[4]


def _lab_build():
    loader = importlib.machinery.SourceFileLoader("volta_lab_pypi_build", str(REPO / "tests/lab/pypi/build"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


LAB = _lab_build()


def standin(shape, dist="vllm", version="0.17.1"):
    """The lab's stand-in fused_moe.py of *shape* (pre, fixed, 1cat), rendered as the lab build does."""
    return LAB.fused_moe_standin(dist, version, shape)


KERNEL_HEAD = """
@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, sorted_token_ids_ptr, num_valid_tokens, stride_am, stride_ak,
                     top_k: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_m = tl.program_id(axis=0)
"""
# before PR #34507, one load (vLLM up to 0.13)
LOAD_OLD = """    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
"""
# before PR #34507, naive block assignment with a one-line tl.where
LOAD_NAIVE = """    offs = tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    if not naive_block_assignment:
        offs_token_id = pid_m * BLOCK_SIZE_M + offs
        offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    else:
        offs_token = tl.where(offs == 0, pid_m, num_valid_tokens)
"""
# before PR #34507 as in vLLM 0.14 ... 0.16: the tl.where spans lines, with comments, then a blank line
LOAD_NAIVE_MULTILINE = """    offs = tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    if not naive_block_assignment:
        offs_token_id = pid_m * BLOCK_SIZE_M + offs
        offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    else:
        offs_token = tl.where(
            offs == 0,
            pid_m,  # (first)
            num_valid_tokens,  # the rest)
        )

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
# a third kernel that reads A through offs_token * stride_am but has no site the shape knows
BIAS_KERNEL = """

@triton.jit
def fused_moe_kernel_bias(a_ptr, offs_token, stride_am, top_k: tl.constexpr):
    mask = offs_token >= 0
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am)
"""
# vLLM 0.17.0 ... 0.33.0
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
# vLLM up to 0.16.0: fixed tiles, never a K tile of 128
CONFIG_OLD = """

def get_default_config(M, E, N, K, topk, dtype, is_marlin):
    if M <= E:
        return {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1}
    config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    return config
"""
CONFIG_SM70 = CONFIG.replace(
    '    return {\n',
    '    if current_platform.is_device_capability(70):\n        block_k = min(block_k, 64)\n    return {\n')
# 1Cat-vLLM v1.2.0 and later: a branch for "at least SM70 and not SM75" before the 128 default
CONFIG_1CAT = CONFIG.replace("    block_m = 16 if M <= 32 else 64\n", """    if (
        sm70_switch_on()
        and dtype is None
        and current_platform.has_device_capability(70)
        and not current_platform.has_device_capability(75)
    ):
        return {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64}
    block_m = 16 if M <= 32 else 64
""")
# a default config with a 128 K tile in a shape the patch does not know
CONFIG_LITERAL_128 = CONFIG_OLD.replace('"BLOCK_SIZE_K": 64', '"BLOCK_SIZE_K": 128')

PRE_FIX_OLD = KERNEL_HEAD + LOAD_OLD + KERNEL_TAIL + GPTQ_OLD + CONFIG_OLD
PRE_FIX_NAIVE = KERNEL_HEAD + LOAD_NAIVE + KERNEL_TAIL + GPTQ_OLD + CONFIG_OLD
PRE_FIX_MULTILINE = KERNEL_HEAD + LOAD_NAIVE_MULTILINE + KERNEL_TAIL + GPTQ_OLD + CONFIG_OLD
ONE_KERNEL_OLD = KERNEL_HEAD + LOAD_OLD + KERNEL_TAIL + CONFIG_OLD  # vLLM up to 0.7.0
POST_FIX = KERNEL_HEAD + LOAD_NAIVE_MULTILINE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG
POST_FIX_SM70 = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG_SM70
ONECAT = KERNEL_HEAD + LOAD_NAIVE_MULTILINE + CAST + KERNEL_TAIL + GPTQ_FIXED + CONFIG_1CAT
HALF_FIXED = KERNEL_HEAD + LOAD_NAIVE + CAST + KERNEL_TAIL + GPTQ_OLD + CONFIG
THREE_KERNELS = PRE_FIX_MULTILINE + BIAS_KERNEL
TWO_SITES_ONE_KERNEL = PRE_FIX_OLD.replace(KERNEL_TAIL, KERNEL_TAIL + LOAD_OLD + KERNEL_TAIL, 1)
SITE_OUTSIDE = POST_FIX + "\n\ndef tune(M, dtype):\n    block_k = 128 if dtype == 'fp8_w8a8' or M <= 64 else 64\n"
UNRELATED = "def fused_experts(x):\n    return x\n"
RENAMED = POST_FIX.replace("token_mask = offs_token < num_valid_tokens", "mask = offs_token < num_valid_tokens")
MOVED_LOAD = PRE_FIX_OLD.replace("    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)\n",
                                 "    offs_token = load_tokens(sorted_token_ids_ptr, offs_token_id)\n", 1)

INT64 = "fused_moe_int64_offsets"
BLOCK_K = "fused_moe_sm70_block_k"


@pytest.mark.parametrize(
    "name, text, dist, version, result, sites",
    [
        (INT64, PRE_FIX_OLD, "vllm", "0.10.2", "patched", 2),
        (INT64, PRE_FIX_NAIVE, "vllm", "0.14.0", "patched", 2),
        (INT64, PRE_FIX_MULTILINE, "vllm", "0.16.0", "patched", 2),
        (INT64, ONE_KERNEL_OLD, "vllm", "0.6.4", "patched", 1),
        (INT64, HALF_FIXED, "vllm", "0.16.0", "patched", 2),
        (INT64, POST_FIX, "vllm", "0.19.1", "fixed_upstream", 2),
        (INT64, ONECAT, "1cat-vllm", "1.3.0", "fixed_upstream", 2),
        (INT64, PRE_FIX_MULTILINE, "1cat_vllm", "1.1.0", "patched", 2),
        (INT64, standin("pre"), "vllm", "0.17.1", "patched", 2),
        (INT64, standin("fixed"), "vllm", "0.21.0", "fixed_upstream", 2),
        (INT64, standin("1cat", "1cat_vllm", "1.5.1"), "1cat_vllm", "1.5.1", "fixed_upstream", 2),
        (BLOCK_K, POST_FIX, "vllm", "0.21.0", "patched", 1),
        (BLOCK_K, PRE_FIX_MULTILINE, "vllm", "0.16.0", "not_needed", 0),
        (BLOCK_K, PRE_FIX_MULTILINE, "1cat_vllm", "1.1.0", "not_needed", 0),
        (BLOCK_K, POST_FIX_SM70, "vllm", "0.30.0", "fixed_upstream", 1),
        (BLOCK_K, ONECAT, "1cat-vllm", "1.3.0", "fixed_upstream", 1),
        (BLOCK_K, standin("fixed"), "vllm", "0.19.1", "patched", 1),
        (BLOCK_K, standin("pre"), "vllm", "0.17.1", "not_needed", 0),
        (BLOCK_K, standin("1cat", "1cat_vllm", "1.5.1"), "1cat_vllm", "1.5.1", "fixed_upstream", 1),
    ],
)
def test_present_then_idempotent_then_absent(name, text, dist, version, result, sites):
    first = plan(name, text, "present", {}, dist, version, "/x/fused_moe.py")
    assert first["result"] == result
    assert len(first["sites"]) == sites
    assert first["changed"] is (result == "patched")
    compile(first["text"], "fused_moe.py", "exec")  # still Python
    second = plan(name, first["text"], "present", {}, dist, version, "/x/fused_moe.py")
    expected_again = "already_patched" if result == "patched" else result
    assert (second["result"], second["changed"], second["text"]) == (expected_again, False, first["text"])
    removed = plan(name, first["text"], "absent", {}, dist, version, "/x/fused_moe.py")
    assert removed["text"] == text  # exactly the original
    assert removed["result"] == ("removed" if result == "patched" else result)
    again = plan(name, text, "absent", {}, dist, version, "/x/fused_moe.py")
    assert again["changed"] is False


def test_int64_patch_inserts_the_cast_before_every_mask():
    out = plan(INT64, PRE_FIX_MULTILINE, dist="vllm", version="0.16.0")
    cast_then_mask = re.findall(r"offs_token = offs_token\.to\(tl\.int64\)\n.*\n\s*token_mask = ", out["text"])
    assert len(cast_then_mask) == 2
    assert out["message"].endswith(f"applied at 2 of 2 site(s) (line(s) {out['sites'][0]}, {out['sites'][1]})")


@pytest.mark.parametrize(
    "text, statement",
    [
        (LOAD_NAIVE_MULTILINE + "    token_mask = x\n",
         "offs_token = tl.where( offs == 0, pid_m, num_valid_tokens, )"),
        (CAST + "\n    token_mask = x\n", "offs_token = offs_token.to(tl.int64)"),
        ("    s = 'a # b'  # c\n    token_mask = x\n", "s = \"\""),
        ("    token_mask = x\n", ""),
    ],
)
def test_previous_statement_joins_brackets_and_drops_comments(text, statement):
    lines = text.split("\n")
    assert previous_statement(lines, next(i for i, line in enumerate(lines) if "token_mask" in line)) == statement


@pytest.mark.parametrize(
    "name, text, dist, message",
    [
        (INT64, PRE_FIX_MULTILINE, "vllm", "applied at 2 of 2 site(s)"),
        (BLOCK_K, PRE_FIX_MULTILINE, "vllm",
         "not needed (get_default_config never picks a BLOCK_SIZE_K of 128), left alone"),
        (BLOCK_K, ONECAT, "1cat_vllm", "fixed upstream (get_default_config already special-cases SM70), left alone"),
        (INT64, POST_FIX, "vllm", "fixed upstream at line(s) "),
    ],
)
def test_messages(name, text, dist, message):
    out = plan(name, text, dist=dist, version="1.3.0" if "1cat" in dist else "0.16.0", path="/f")
    assert message in out["message"] and out["message"].startswith(f"patch {name} on /f (")


def test_both_patches_stack_and_compile():
    one = plan(INT64, PRE_FIX_OLD.replace(CONFIG_OLD, CONFIG), dist="vllm", version="0.17.0")["text"]
    two = plan(BLOCK_K, one, dist="vllm", version="0.17.0")["text"]
    compile(two, "fused_moe.py", "exec")
    assert plan(INT64, two, dist="vllm", version="0.17.0")["result"] == "already_patched"
    assert plan(BLOCK_K, two, dist="vllm", version="0.17.0")["result"] == "already_patched"


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
    "name, text, dist, version, message",
    [
        # shapes the patch does not know
        (INT64, UNRELATED, "vllm", "0.16.0", "unrecognised file shape (no line matching "),
        (INT64, RENAMED, "vllm", "0.16.0", "unrecognised file shape (no line matching "),
        (INT64, MOVED_LOAD, "vllm", "0.16.0",
         "unrecognised shape at line 8 ('offs_token = load_tokens(sorted_token_ids_ptr, offs_token_id)' before "
         "'token_mask = offs_token < num_valid_tokens'); not patched"),
        (BLOCK_K, UNRELATED, "vllm", "0.21.0", "unrecognised file shape (no line matching "),
        (BLOCK_K, PRE_FIX_OLD.replace(CONFIG_OLD, CONFIG_LITERAL_128), "vllm", "0.21.0",
         "unrecognised file shape (no line matching "),
        # a number of sites other than the shape's
        (INT64, THREE_KERNELS, "vllm", "0.16.0",
         "expected one patch site in each kernel that computes A's pointers from offs_token * stride_am "
         "(fused_moe_kernel, fused_moe_kernel_gptq_awq, fused_moe_kernel_bias), found 1 in fused_moe_kernel "
         "(line 17); 1 in fused_moe_kernel_gptq_awq (line 28); 0 in fused_moe_kernel_bias; not patched"),
        (INT64, TWO_SITES_ONE_KERNEL, "vllm", "0.16.0",
         "found 2 in fused_moe_kernel (line 8, 15); 1 in fused_moe_kernel_gptq_awq (line 26)"),
        (BLOCK_K, SITE_OUTSIDE, "vllm", "0.21.0", "expected one patch site in each default config function "
         "(get_default_config), found 1 in get_default_config (line 37); 1 outside them (line 46)"),
        # versions outside applies_to
        (INT64, PRE_FIX_OLD, "vllm", "0.5.0", "refusing to patch: vllm 0.5.0 is outside >=0.6.4"),
        (INT64, UNRELATED, "vllm", "0.5.0",
         "refusing to patch: vllm 0.5.0 is outside >=0.6.4 (and unrecognised file shape"),
        (BLOCK_K, POST_FIX, "vllm", "0.16.0", "refusing to patch: vllm 0.16.0 is outside >=0.17.0"),
        (BLOCK_K, POST_FIX, "1cat-vllm", "1.3.0",
         "refusing to patch: 1cat-vllm is not a distribution this patch applies to (vllm)"),
        (INT64, PRE_FIX_OLD, "sglang", "0.4.0",
         "refusing to patch: sglang is not a distribution this patch applies to (1cat-vllm, vllm)"),
    ],
)
def test_refusals_name_the_file_the_version_and_the_patch(name, text, dist, version, message):
    with pytest.raises(PatchError) as exc:
        plan(name, text, "present", {}, dist, version, "/opt/x/fused_moe.py")
    assert message in str(exc.value)
    assert str(exc.value).startswith(f"patch {name} on /opt/x/fused_moe.py ({dist} {version}): ")


@pytest.mark.parametrize("block_k", [0, -64, 48, 8, True, "64"])
def test_block_k_must_be_a_triton_k_tile(block_k):
    with pytest.raises(PatchError) as exc:
        plan(BLOCK_K, CONFIG, params={"block_k": block_k})
    assert f"patch {BLOCK_K}: block_k must be a power of two of at least 16" in str(exc.value)
    assert f"got {block_k!r}" in str(exc.value) and "VOLTA_SERVING_MOE_BLOCK_K_SM70=0" in str(exc.value)


def test_hand_edited_block_fails():
    patched = plan(INT64, PRE_FIX_OLD)["text"]
    broken = patched.replace("# <<< volta.serving: fused_moe_int64_offsets", "", 1)
    with pytest.raises(PatchError, match=r"never ends|edited"):
        plan(INT64, broken)


def test_version_gate():
    # an upstream-fixed file is fine at any version
    assert plan(INT64, POST_FIX, dist="vllm", version="0.5.0")["result"] == "fixed_upstream"
    assert plan(BLOCK_K, ONECAT, dist="1cat-vllm", version="0.1.0")["result"] == "fixed_upstream"
    assert version_allowed(INT64, "1cat_vllm", "1.5.1") == (True, "")
    assert version_allowed(BLOCK_K, "vllm", "0.33.0") == (True, "")
    assert version_allowed(INT64, "sglang", "1.0")[0] is False
    assert version_allowed(INT64, None, None)[0] is True


def test_catalog_entries_are_complete():
    keys = {"description", "target", "applies_to", "file_requires", "site_functions", "function_fixed_upstream",
            "function_needs", "anchor", "position", "window", "site_fixed_upstream", "site_unpatched", "insert"}
    for name, patch in CATALOG.items():
        assert set(patch) == keys, name
        assert set(patch["site_functions"]) == {"name", "body", "what"}, name
        assert patch["insert"][0].startswith(f"{{indent}}# >>> volta.serving: {name}")
        assert patch["insert"][-1] == f"{{indent}}# <<< volta.serving: {name}"
