# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the serving rules know about V100 (SM70) and the engines: the value tables and the readers of argv.

Pure Python, no Ansible imports. Every layer of rules (the ``_rules_*`` modules, the registry
``_rules``) and the plan (``_plan``) read these; the rules themselves are in the layer modules.

Sources: ``shared/reference/v100-serving-facts.md`` sections 1, 3 and 4 and the two seed
write-ups.
"""

from __future__ import annotations

ENGINES = ("vllm", "onecat", "llamacpp")
VLLM_ENGINES = ("vllm", "onecat")  # the engines with vLLM's CLI (`vllm serve`)
MODEL_FAMILIES = ("dense", "moe", "moe-nvfp4", "qwen-linear", "deepseek-v4", "deepseek-mla")
QUANTIZATIONS = ("none", "awq", "gptq", "fp8", "nvfp4", "mxfp4", "gguf")

# vLLM 0.21.0's --kv-cache-dtype choices (tests/lab/pypi/vllm-flags/0.21.0.json).
KV_CACHE_DTYPES = (
    "auto",
    "bfloat16",
    "float16",
    "fp8",
    "fp8_ds_mla",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_per_token_head",
    "int8_per_token_head",
    "nvfp4",
    "turboquant_3bit_nc",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_k8v4",
)

DTYPES = ("auto", "half", "float16", "bfloat16", "bf16", "float", "float32")
BF16_DTYPES = ("bfloat16", "bf16")

# Families with a MoE whose NVFP4 kernels only take TP 1, 2 or 4 on 1Cat-vLLM.
MOE_FAMILIES = ("moe", "moe-nvfp4")

# Qwen3.8-Flash-Next-style models (GDN linear attention + QSA sparse attention). moe-nvfp4 is the
# family of Qwen3.8-Flash-Next in this collection (the NVFP4 checkpoint of facts section 1).
QWEN_FAMILIES = ("qwen-linear", "moe-nvfp4")

# Quantizations upstream vLLM has no SM70 kernels for (FP8 tensor cores: Ada+; AWQ: 7.5;
# NVFP4/MXFP4: Blackwell). 1Cat-vLLM's TurboMind kernels dequantize them to FP16. Not GPTQ:
# vLLM 0.21.0's `gptq` method (exllama kernels) takes compute capability 6.0; only gptq_marlin
# needs 7.5, and vLLM falls back to `gptq` below it (get_min_capability of the real release).
ONECAT_ONLY_QUANTIZATIONS = ("fp8", "awq", "nvfp4", "mxfp4")
NVFP4_MOE_TP_SIZES = (1, 2, 4)
LONG_CONTEXT = 1_000_000
LONG_CONTEXT_MAX_SEQS = 4
GPU_MEMORY_HEADROOM = 0.95
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

# Compute capabilities below which a rule applies. Volta is 7.0; Turing (7.5) is the first
# architecture of the open kernel modules, of CUDA 13 and of torch's cu128 wheels from 2.11 on.
SM70_BELOW = (7, 5)
FLASH_ATTENTION_MIN = (8, 0)  # FlashAttention 2/3 and FlashInfer: Ampere and newer
LAST_VOLTA_DRIVER_BRANCH = 580

# vLLM 0.21.0's scheduler defaults for `vllm serve` on CUDA, read from the real release
# (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults and
# _set_default_max_num_seqs_and_batched_tokens_args): on a GPU under 70 GiB (every V100), usage
# context OPENAI_API_SERVER, max_num_batched_tokens 2048 and max_num_seqs 256, both doubled by
# --performance-mode throughput. Left unset, max_num_batched_tokens becomes
# max(max_model_len, 2048) when chunked prefill is off, then at most max_num_seqs x max_model_len;
# max_num_seqs left unset becomes min(256, max_num_batched_tokens). (The CPU platform uses
# 2048 x world size and 128 x world size instead.)
VLLM_SERVE_DEFAULT_MBT = 2048
VLLM_SERVE_DEFAULT_SEQS = 256
CHUNKED_ON = ("--enable-chunked-prefill", "--enable_chunked_prefill")
CHUNKED_OFF = ("--no-enable-chunked-prefill", "--no_enable_chunked_prefill")
_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off", "0", "1")

# Host RAM an instance needs, in GB, by model family (the rest of the host keeps
# HOST_RAM_RESERVE_GB). Qwen3.8-Flash-Next (moe-nvfp4) offloads ~48 GB of n-gram embeddings per
# instance; two instances used ~156 GB in all (facts section 4), hence 78 each.
HOST_RAM_RESERVE_GB = 16
HOST_RAM_NEED_GB = {
    "dense": 16,
    "moe": 16,
    "moe-nvfp4": 78,
    "qwen-linear": 16,
    "deepseek-v4": 16,
    "deepseek-mla": 16,
}


def below(cc, limit):
    """True when compute capability tuple *cc* is known and below *limit*."""
    return cc is not None and cc[:2] < limit


def flag_values(args, names):
    """Values given to any of the flags *names* in *args* (``--x v`` or ``--x=v``), in order."""
    values = []
    index = 0
    while index < len(args):
        arg = args[index]
        for name in names:
            if arg == name:
                values.append(args[index + 1] if index + 1 < len(args) else "")
                index += 1
                break
            if arg.startswith(name + "="):
                values.append(arg[len(name) + 1 :])
                break
        index += 1
    return values


def has_flag(args, names):
    return any(arg in names or any(arg.startswith(name + "=") for name in names) for arg in args)


def chunked_prefill(args):
    """``(state, bad)`` for the chunked-prefill flags of ``vllm serve`` in *args*.

    *state* is True, False, or None when no flag is given (vLLM then enables it for every
    decoder-only generate model); the last flag wins, as argparse does. *bad* lists the forms
    the real parser refuses (a value after the flag: it is a BooleanOptionalAction).
    """
    state, bad = None, []
    for index, arg in enumerate(args):
        name, eq, _value = str(arg).partition("=")
        if name not in CHUNKED_ON + CHUNKED_OFF:
            continue
        following = str(args[index + 1]).lower() if index + 1 < len(args) else ""
        if eq or following in _BOOL_WORDS:
            bad.append(arg if eq else f"{arg} {args[index + 1]}")
            continue
        state = name in CHUNKED_ON
    return state, bad


def throughput_mode(args):
    values = flag_values(args, ("--performance-mode", "--performance_mode"))
    return bool(values) and values[-1] == "throughput"


def vllm_default_mbt(max_model_len, max_num_seqs, chunked, throughput=False):
    """The max_num_batched_tokens vLLM 0.21.0 picks when it is not given (CUDA, `vllm serve`).

    ``None`` when it depends on the model's own context length (chunked prefill off and
    max_model_len unknown: it is then at least that length).
    """
    factor = 2 if throughput else 1
    mbt = VLLM_SERVE_DEFAULT_MBT * factor
    if max_model_len is None:
        return None if chunked is False else mbt
    if chunked is False:
        mbt = max(max_model_len, mbt)
    return min((max_num_seqs or VLLM_SERVE_DEFAULT_SEQS * factor) * max_model_len, mbt)


def int_flag(args, names):
    """The last value of the flags *names* in *args* as an int; None when absent or not a number."""
    values = flag_values(args, names)
    try:
        return int(values[-1]) if values else None
    except ValueError:
        return None


def is_loopback(address):
    address = str(address).strip().strip("[]")
    return address in LOOPBACK_HOSTS or address.startswith("127.")


def tp_groups(gpus, tp, pp):
    """The tensor-parallel groups: consecutive chunks of *gpus* of size *tp*, one per PP stage."""
    return [list(gpus[stage * tp : (stage + 1) * tp]) for stage in range(pp)]


def better_grouping(gpus, tp, pp, islands):
    """An order of *gpus* whose TP groups each stay inside one NVLink island, or ``None``."""
    remaining = set(gpus)
    chunks = []
    for island in islands:
        members = [gpu for gpu in sorted(island) if gpu in remaining]
        while len(members) >= tp and len(chunks) < pp:
            chunks.append(members[:tp])
            members = members[tp:]
    if len(chunks) < pp:
        return None
    return [gpu for chunk in chunks for gpu in chunk]


# vLLM 0.21.0's own wording (vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len).
def vllm_mbt_below_len_message(mbt, max_model_len):
    return (
        f"max_num_batched_tokens ({mbt}) is smaller than max_model_len ({max_model_len}). This effectively "
        "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
        "Please increase max_num_batched_tokens or decrease max_model_len."
    )


def vllm_mbt_below_seqs_message(mbt, seqs):
    return f"max_num_batched_tokens ({mbt}) must be greater than or equal to max_num_seqs ({seqs})."
