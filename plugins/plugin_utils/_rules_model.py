# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model-family rules of an instance, from its settings alone: NVFP4 MoE parallelism, Qwen GDN/QSA
pipeline parallelism and FP8 KV with MTP, DeepSeek-V4's KV cache, 1M-token contexts, MTP on PCIe.

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE and the per-instance checks. The rules that read the checkpoint itself are
``_model_rules`` (run when volta.serving.model_facts read the models).
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    LONG_CONTEXT,
    LONG_CONTEXT_MAX_SEQS,
    MOE_FAMILIES,
    NVFP4_MOE_TP_SIZES,
    QWEN_FAMILIES,
    flag_values,
    has_flag,
)

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "nvfp4-moe-tp": (ERROR, True, "NVFP4 MoE on 1Cat-vLLM with TP outside 1, 2, 4 or with EP/DP (unverified)"),
    "qwen-linear-pp": (ERROR, True, "pipeline parallelism for a Qwen GDN/QSA model (unverified)"),
    "qwen-fp8-kv-mtp": (ERROR, False, "FP8 KV cache together with MTP on a Qwen GDN/QSA model"),
    "deepseek-v4-kv": (ERROR, False, "DeepSeek-V4 without an FP8 KV cache"),
    "long-context-seqs": (WARNING, False, "a 1M-token context with more than 4 concurrent sequences"),
    "mtp-pcie-tp": (WARNING, False, "MTP with TP >= 3 on a PCIe-only host"),
}


def check_model_family(inst, ctx):
    """The rules of the instance's model family and settings, in this order."""
    out = []
    for check in (_nvfp4_moe_tp, _qwen_linear_pp, _qwen_fp8_kv_mtp, _deepseek_v4_kv, _long_context_seqs,
                  _mtp_pcie_tp):
        out += check(inst, ctx)
    return out


def _nvfp4_moe_tp(inst, ctx):
    family, tp, extra = inst["model_family"], inst["tensor_parallel"], inst["extra_args"] or []
    nvfp4_moe = family == "moe-nvfp4" or (inst["quantization"] == "nvfp4" and family in MOE_FAMILIES)
    if not (inst["engine"] == "onecat" and nvfp4_moe and tp is not None):
        return []
    ep = has_flag(extra, ("--enable-expert-parallel", "-ep"))
    dp = [v for v in flag_values(extra, ("--data-parallel-size", "-dp")) if v not in ("1", "")]
    if tp in NVFP4_MOE_TP_SIZES and not ep and not dp:
        return []
    what = f"tensor_parallel {tp}" if tp not in NVFP4_MOE_TP_SIZES else "expert/data parallelism"
    return [
        finding(
            "nvfp4-moe-tp",
            ctx["host"],
            inst["name"],
            "tensor_parallel",
            f"{what} for an NVFP4 MoE model on 1Cat-vLLM (unverified rule, may be allowed).",
            "1Cat-vLLM's NVFP4 MoE kernels support tensor parallel sizes (1, 2, 4) only, with no EP or DP.",
            "run TP=4 instances side by side instead (8 GPUs: two TP=4 instances, 371 tok/s aggregate "
            "measured), or allow the rule with a reason once a newer 1Cat-vLLM supports it.",
        )
    ]


def _qwen_linear_pp(inst, ctx):
    family, pp = inst["model_family"], inst["pipeline_parallel"]
    if not (family in QWEN_FAMILIES and pp is not None and pp > 1):
        return []
    return [
        finding(
            "qwen-linear-pp",
            ctx["host"],
            inst["name"],
            "pipeline_parallel",
            f"pipeline_parallel {pp} for model_family {family} (unverified rule, may be allowed).",
            "Qwen's GDN linear + QSA sparse attention cannot split its cache by pipeline stage "
            "('CSA+linear ... cache geometry').",
            "use tensor parallelism only (TP=4, pipeline_parallel: 1).",
        )
    ]


def _qwen_fp8_kv_mtp(inst, ctx):
    family, kv = inst["model_family"], inst["kv_cache_dtype"]
    if not (family in QWEN_FAMILIES and inst["mtp"] and kv is not None and kv.startswith("fp8")):
        return []
    return [
        finding(
            "qwen-fp8-kv-mtp",
            ctx["host"],
            inst["name"],
            "kv_cache_dtype",
            f"kv_cache_dtype {kv} together with mtp: true for model_family {family}.",
            "Qwen's QSA attention cannot use an FP8 KV cache with MTP ('QSA E4M3 phase 1 requires MTP0').",
            "set mtp: false when the KV cache is FP8 (the 1M-context configuration), or kv_cache_dtype: auto.",
        )
    ]


def _deepseek_v4_kv(inst, ctx):
    kv = inst["kv_cache_dtype"]
    if not (inst["model_family"] == "deepseek-v4" and kv is not None and not kv.startswith("fp8")):
        return []
    return [
        finding(
            "deepseek-v4-kv",
            ctx["host"],
            inst["name"],
            "kv_cache_dtype",
            f"kv_cache_dtype {kv} for model_family deepseek-v4.",
            "'DeepseekV4 only supports fp8 kv-cache'.",
            "set kv_cache_dtype: fp8.",
        )
    ]


def _long_context_seqs(inst, ctx):
    mml, seqs = inst["max_model_len"], inst["max_num_seqs"]
    if not (mml is not None and mml >= LONG_CONTEXT and (seqs is None or seqs > LONG_CONTEXT_MAX_SEQS)):
        return []
    shown = "unset (the engine default is far above 4)" if seqs is None else str(seqs)
    return [
        finding(
            "long-context-seqs",
            ctx["host"],
            inst["name"],
            "max_num_seqs",
            f"max_model_len {mml} with max_num_seqs {shown}.",
            "the 1M-context configuration has almost no GPU memory headroom; the reference server died "
            "at 8 concurrent requests.",
            f"set max_num_seqs: {LONG_CONTEXT_MAX_SEQS} or lower, or a shorter max_model_len.",
        )
    ]


def _mtp_pcie_tp(inst, ctx):
    tp = inst["tensor_parallel"]
    if not (inst["mtp"] and tp is not None and tp >= 3 and not ctx["islands"]):
        return []
    return [
        finding(
            "mtp-pcie-tp",
            ctx["host"],
            inst["name"],
            "mtp",
            f"mtp: true with tensor_parallel {tp} on a PCIe-only host.",
            "with 3+ GPUs on PCIe, custom all-reduce is off and speculative decoding costs more "
            "communication than it saves (measured 37 tok/s with MTP vs 64 without).",
            "set mtp: false.",
        )
    ]
