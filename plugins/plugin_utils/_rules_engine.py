# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine rules of one instance: parallelism and NVLink, dtype, attention backend, quantization, GPU
memory, and the flags the plan sets itself.

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE and the per-instance checks. ``inst`` is a normalised instance from
_normalize.normalize_instance: every known field is present, None where it was missing or invalid (that
already gave a finding). ``ctx`` holds host, cc (tuple), islands, gpu_count, profiles and the settings.
The vLLM flag rules (unknown-flag, flag-not-recorded, config-file-flag) are checked by ``_vllm_cli``.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    BF16_DTYPES,
    FLASH_ATTENTION_MIN,
    GPU_MEMORY_HEADROOM,
    ONECAT_ONLY_QUANTIZATIONS,
    SM70_BELOW,
    VLLM_ENGINES,
    below,
    better_grouping,
    has_flag,
    tp_groups,
)

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "parallel-size-mismatch": (ERROR, False, "tensor_parallel x pipeline_parallel != number of GPUs"),
    "tp-spans-nvlink": (WARNING, False, "a tensor-parallel group spans NVLink islands"),
    "bf16-on-sm70": (ERROR, False, "bfloat16 on a GPU without bf16"),
    "flash-attention-on-sm70": (ERROR, False, "a FlashAttention/FlashInfer backend on a pre-Ampere GPU"),
    "quantization-needs-onecat": (ERROR, False, "FP8/AWQ/GPTQ/NVFP4/MXFP4 on upstream vLLM on SM70"),
    "mla-needs-llamacpp": (ERROR, False, "DeepSeek MLA on vLLM/1Cat-vLLM on SM70"),
    "llamacpp-needs-gguf": (ERROR, False, "llama.cpp given something other than a GGUF model"),
    "gpu-memory-utilization": (ERROR, False, "gpu_memory_utilization outside (0, 1]"),
    "gpu-memory-headroom": (WARNING, False, "gpu_memory_utilization above 0.95 leaves no CUDA graph reserve"),
    "managed-flag": (ERROR, False, "an extra_args flag or env variable the plan sets from a field"),
    "unknown-flag": (ERROR, False, "an extra_args flag the pinned vLLM parser refuses (unknown or ambiguous)"),
    "flag-not-recorded": (WARNING, False, "an extra_args flag not in the recorded flag list of vLLM"),
    "config-file-flag": (ERROR, False, "extra_args --config: options from a file preflight cannot check"),
}


def _parallel_mismatch(host, name, tp, pp, gpus, hosts):
    where = f"gpus lists {len(gpus)} GPU(s) {gpus}"
    if hosts > 1:
        where = f"the cluster has {len(gpus) * hosts} GPU(s) ({len(gpus)} per member {gpus} x {hosts} members)"
    return finding(
        "parallel-size-mismatch",
        host,
        name,
        "tensor_parallel",
        f"tensor_parallel {tp} x pipeline_parallel {pp} = {tp * pp}, but {where}.",
        "the engine starts one worker per GPU of tp x pp and needs exactly that many visible GPUs.",
        "make tensor_parallel x pipeline_parallel equal the number of entries in gpus"
        + (" times the cluster's members." if hosts > 1 else "."),
    )


def check_parallel(inst, ctx):
    gpus, tp, pp = inst["gpus"], inst["tensor_parallel"], inst["pipeline_parallel"]
    if gpus is None or tp is None or pp is None:
        return []
    host, name = ctx["host"], inst["name"]
    out = []
    hosts = len(inst["cluster"]["members"]) if inst.get("cluster") else 1
    if tp * pp != len(gpus) * hosts:
        out.append(_parallel_mismatch(host, name, tp, pp, gpus, hosts))
        return out
    if hosts > 1:
        # Each member runs its own stages; the island check below looks at one member's part.
        if len(gpus) % tp:
            return out
        pp = len(gpus) // tp
    islands = ctx["islands"]
    in_range = ctx["gpu_count"] is None or all(gpu < ctx["gpu_count"] for gpu in gpus)
    if islands and tp > 1 and in_range:  # out-of-range GPUs already gave an error
        island_of = {gpu: i for i, island in enumerate(islands) for gpu in island}
        for stage, group in enumerate(tp_groups(gpus, tp, pp)):
            owners = {island_of.get(gpu, ("pcie", gpu)) for gpu in group}
            if len(owners) > 1:
                better = better_grouping(gpus, tp, pp, islands)
                fix = (
                    f"order gpus as {better} so that each TP group of {tp} stays on one NVLink board."
                    if better and better != gpus
                    else f"no order of these GPUs keeps every TP group of {tp} inside one NVLink island: "
                    "pick GPUs of one board per TP group, or lower tensor_parallel and raise pipeline_parallel."
                )
                out.append(
                    finding(
                        "tp-spans-nvlink",
                        host,
                        name,
                        "gpus",
                        f"TP group {group} (pipeline stage {stage}) spans NVLink islands {islands}.",
                        "tensor parallelism all-reduces every layer; across boards it runs over PCIe/NUMA "
                        "instead of NVLink and decode slows down.",
                        fix,
                    )
                )
                break
    return out


def check_dtype(inst, ctx):
    if inst["dtype"] in BF16_DTYPES and below(ctx["cc"], FLASH_ATTENTION_MIN):
        return [
            finding(
                "bf16-on-sm70",
                ctx["host"],
                inst["name"],
                "dtype",
                f"dtype {inst['dtype']} on compute capability {ctx['cc_text']}.",
                "V100 (SM70) has no bfloat16 arithmetic; bf16 needs compute capability 8.0 or newer.",
                "use dtype: half (the profile default) or remove dtype from the instance.",
            )
        ]
    return []


def check_attention(inst, ctx):
    if inst["engine"] not in VLLM_ENGINES:
        return []
    backend = inst.get("attention_backend")
    if not backend:
        return []
    host, name = ctx["host"], inst["name"]
    if backend == "FLASH_ATTN_V100" and inst["engine"] == "vllm":
        return [
            finding(
                "unknown-value",
                host,
                name,
                "extra_args",
                "--attention-backend FLASH_ATTN_V100 on upstream vLLM.",
                "FLASH_ATTN_V100 is a 1Cat-vLLM backend; upstream vLLM does not have it.",
                "use engine: onecat, or --attention-backend TRITON_ATTN (the vllm profile default).",
            )
        ]
    flashy = (backend.startswith("FLASH") or backend.startswith("CUTLASS")) and backend != "FLASH_ATTN_V100"
    if flashy and below(ctx["cc"], FLASH_ATTENTION_MIN):
        better = "TRITON_ATTN" if inst["engine"] == "vllm" else "FLASH_ATTN_V100"
        return [
            finding(
                "flash-attention-on-sm70",
                host,
                name,
                "extra_args",
                f"--attention-backend {backend} on {inst['engine']} on compute capability {ctx['cc_text']}.",
                "FlashAttention 2/3, FlashInfer and FlashMLA need Ampere (SM80) or newer; V100 is SM70.",
                f"remove --attention-backend from extra_args (the profile uses {better}).",
            )
        ]
    return []


def check_quantization(inst, ctx):
    host, name, engine, quant = ctx["host"], inst["name"], inst["engine"], inst["quantization"]
    family = inst["model_family"]
    out = []
    if engine == "vllm" and below(ctx["cc"], SM70_BELOW):
        wanted = quant if quant in ONECAT_ONLY_QUANTIZATIONS else ("nvfp4" if family == "moe-nvfp4" else None)
        if wanted:
            out.append(
                finding(
                    "quantization-needs-onecat",
                    host,
                    name,
                    "quantization",
                    f"{wanted} weights on upstream vLLM on compute capability {ctx['cc_text']}.",
                    "upstream vLLM has no SM70 kernels for FP8, AWQ (SM75+), NVFP4 or MXFP4.",
                    "use engine: onecat (1Cat-vLLM dequantizes them to FP16 with its TurboMind SM70 kernels), "
                    "or an FP16 checkpoint.",
                )
            )
    if engine in VLLM_ENGINES and family == "deepseek-mla" and below(ctx["cc"], SM70_BELOW):
        out.append(
            finding(
                "mla-needs-llamacpp",
                host,
                name,
                "engine",
                f"model_family deepseek-mla on {engine} on compute capability {ctx['cc_text']}.",
                "vLLM's MLA kernels for DeepSeek V3/R1 need Hopper; they do not run on V100.",
                "use engine: llamacpp with a GGUF of the model.",
            )
        )
    if engine == "llamacpp" and quant is not None and quant != "gguf":
        out.append(
            finding(
                "llamacpp-needs-gguf",
                host,
                name,
                "quantization",
                f"quantization {quant} with engine llamacpp.",
                "llama.cpp loads GGUF files only.",
                "point model at a .gguf file and set quantization: gguf, or use engine vllm/onecat.",
            )
        )
    return out


def check_memory(inst, ctx):
    gmu = inst["gpu_memory_utilization"]
    if gmu is None or inst["engine"] not in VLLM_ENGINES:
        return []
    host, name = ctx["host"], inst["name"]
    if not 0 < gmu <= 1:
        return [
            finding(
                "gpu-memory-utilization",
                host,
                name,
                "gpu_memory_utilization",
                f"gpu_memory_utilization {gmu} is outside (0, 1].",
                "it is the fraction of each GPU's memory the engine may take.",
                "use a value such as 0.90 (the profile default); 0.95 is the most the reference servers ran.",
            )
        ]
    if gmu > GPU_MEMORY_HEADROOM:
        return [
            finding(
                "gpu-memory-headroom",
                host,
                name,
                "gpu_memory_utilization",
                f"gpu_memory_utilization {gmu} is above {GPU_MEMORY_HEADROOM}.",
                "without a reserve the KV cache takes all memory and CUDA graph capture runs out of memory.",
                f"keep it at {GPU_MEMORY_HEADROOM} or below and tune max_num_batched_tokens and max_num_seqs.",
            )
        ]
    return []


def managed_finding(ctx, name, flag, field):
    return finding(
        "managed-flag",
        ctx["host"],
        name,
        "extra_args" if flag.startswith("-") else "env",
        f"{flag} is set by volta.serving from {field}.",
        "two values for one setting make what preflight checks differ from what runs.",
        f"remove {flag} and set {field} instead.",
    )


def check_managed(inst, ctx, managed_flags, managed_env):
    out = []
    extra = inst["extra_args"] or []
    for flag, field in managed_flags.items():
        if has_flag(extra, (flag,)):
            out.append(managed_finding(ctx, inst["name"], flag, field))
    for key, field in managed_env.items():
        if key in (inst["env"] or {}):
            out.append(managed_finding(ctx, inst["name"], key, field))
    return out
