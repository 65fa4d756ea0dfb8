# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The V100 (SM70) serving rules: the catalogue, the data they use, and the checks.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection
(leading underscore): no compatibility promise outside volta.serving. ``_plan`` builds the
normalised instances and the launch plan; this module only judges them.

Sources: ``shared/reference/v100-serving-facts.md`` sections 1, 3 and 4 and the two seed
write-ups. Rules marked *unverified* there are ``overridable``: an instance may list them in
``allow`` with a reason, and the finding is then reported as ``allowed`` with that reason.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils import _python

ERROR = "error"
WARNING = "warning"
ALLOWED = "allowed"

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
FIRST_CUDA_WITHOUT_SM70 = 13
# Which official torch wheels carry sm_70 kernels, by (torch minor, CUDA tag of the PyTorch index):
# recorded from PyTorch's "CUDA Support Matrix" (RELEASE.md) and the RFCs that changed it. A
# combination not listed here is not known; the binary audit after install decides. Every cu13x
# build lacks sm_70 (CUDA 13 cannot compile for Volta), whatever the torch release.
TORCH_SM70_BUILDS = {
    # pytorch/pytorch#147607 took sm_70 out of the cu128 build for 2.7.
    (2, 7): {"cu126": True, "cu128": False},
    # pytorch/pytorch#158126, #160269: Volta kept in the 12.8 and 12.9 builds of 2.8.
    (2, 8): {"cu126": True, "cu128": True, "cu129": True},
    # RELEASE.md matrix "For Release 2.9 and 2.10" (pytorch/pytorch#164471): 12.6 and 12.8 have Volta.
    (2, 9): {"cu126": True, "cu128": True},
    (2, 10): {"cu126": True, "cu128": True},
    # pytorch/pytorch#172352 (RFC) and #175253: Volta dropped from the 12.8 build in 2.11.
    (2, 11): {"cu126": True, "cu128": False},
    # pytorch/pytorch#182849: 12.8 removed in 2.12; 12.6 (Legacy) keeps Volta.
    (2, 12): {"cu126": True},
    (2, 13): {"cu126": True},
    # pytorch/pytorch#190355: 12.6 kept as Legacy in 2.14; #190385 proposes removing it in 2.15.
    (2, 14): {"cu126": True},
}
TORCH_SM70_SOURCE = "PyTorch's CUDA support matrix (RELEASE.md) and RFCs pytorch/pytorch#157517, #172352, #190385"

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

# id: (severity, overridable, what it is about)
RULES = {
    "missing-field": (ERROR, False, "a required field is not set"),
    "invalid-value": (ERROR, False, "a field has the wrong type or an impossible value"),
    "unknown-value": (ERROR, False, "an engine, model family, quantization, dtype or KV dtype that is not known"),
    "unknown-field": (ERROR, False, "an instance field volta.serving does not read (a typo?)"),
    "unknown-variable": (ERROR, False, "a variable with a role's prefix that no role reads (a typo?)"),
    "driver-version-branch": (ERROR, False, "nvidia_driver_version not a version of nvidia_driver_branch"),
    "engine-version": (ERROR, False, "an engine version that is not a release (format, or not on the index)"),
    "engine-index-unread": (WARNING, False, "the engine index could not be read to check the pinned versions"),
    "pin-format": (ERROR, False, "a sha256 or commit pin of the wrong form, or an obvious placeholder"),
    "api-cidrs-empty": (ERROR, False, "instances with the firewall on and no network allowed to reach the API"),
    "duplicate-name": (ERROR, False, "two instances with one name (one systemd unit)"),
    "gpu-out-of-range": (ERROR, False, "a GPU index the host does not have"),
    "gpu-duplicate": (ERROR, False, "the same GPU listed twice in one instance"),
    "gpu-shared": (ERROR, False, "a GPU used by two enabled instances"),
    "parallel-size-mismatch": (ERROR, False, "tensor_parallel x pipeline_parallel != number of GPUs"),
    "tp-spans-nvlink": (WARNING, False, "a tensor-parallel group spans NVLink islands"),
    "port-invalid": (ERROR, False, "a port outside 1-65535, or a backend port below 1024"),
    "port-collision": (ERROR, False, "two listeners on one port (instances, gateway, SSH)"),
    "replica-mismatch": (ERROR, False, "instances that share a served_model_name but not its model, engine or length"),
    "service-port-mismatch": (ERROR, False, "replicas of one served_model_name with different service ports"),
    "replicas-without-service-port": (WARNING, False, "instances that share a served_model_name on their own ports"),
    "replica-key-name": (ERROR, False, "an api_gateway_keys entry named after a replica (the service's is read)"),
    "bf16-on-sm70": (ERROR, False, "bfloat16 on a GPU without bf16"),
    "flash-attention-on-sm70": (ERROR, False, "a FlashAttention/FlashInfer backend on a pre-Ampere GPU"),
    "quantization-needs-onecat": (ERROR, False, "FP8/AWQ/GPTQ/NVFP4/MXFP4 on upstream vLLM on SM70"),
    "mla-needs-llamacpp": (ERROR, False, "DeepSeek MLA on vLLM/1Cat-vLLM on SM70"),
    "llamacpp-needs-gguf": (ERROR, False, "llama.cpp given something other than a GGUF model"),
    "cuda-13-on-sm70": (ERROR, False, "CUDA toolkit 13 or newer on SM70"),
    "driver-branch-above-580": (ERROR, False, "an NVIDIA driver branch newer than 580 on SM70"),
    "driver-open-modules": (ERROR, False, "the open NVIDIA kernel modules on SM70"),
    "torch-without-sm70": (ERROR, False, "a torch build without sm_70 kernels"),
    "torch-sm70-unknown": (WARNING, False, "a torch build not known to have (or lack) sm_70 kernels"),
    "nvfp4-moe-tp": (ERROR, True, "NVFP4 MoE on 1Cat-vLLM with TP outside 1, 2, 4 or with EP/DP (unverified)"),
    "qwen-linear-pp": (ERROR, True, "pipeline parallelism for a Qwen GDN/QSA model (unverified)"),
    "qwen-fp8-kv-mtp": (ERROR, False, "FP8 KV cache together with MTP on a Qwen GDN/QSA model"),
    "deepseek-v4-kv": (ERROR, False, "DeepSeek-V4 without an FP8 KV cache"),
    "long-context-seqs": (WARNING, False, "a 1M-token context with more than 4 concurrent sequences"),
    "mtp-pcie-tp": (WARNING, False, "MTP with TP >= 3 on a PCIe-only host"),
    "host-ram": (WARNING, False, "less host RAM than the enabled instances need"),
    "chunked-prefill-mbt": (ERROR, False, "chunked prefill off with max_num_batched_tokens below max_model_len"),
    "mbt-below-seqs": (ERROR, False, "max_num_batched_tokens below max_num_seqs"),
    "partial-prefill": (ERROR, False, "partial-prefill settings vLLM's SchedulerConfig refuses"),
    "gpu-memory-utilization": (ERROR, False, "gpu_memory_utilization outside (0, 1]"),
    "gpu-memory-headroom": (WARNING, False, "gpu_memory_utilization above 0.95 leaves no CUDA graph reserve"),
    "bind-non-loopback": (ERROR, False, "an engine bound to a non-loopback address"),
    "no-api-key": (ERROR, False, "no API key configured for an instance"),
    "secret-in-plan": (ERROR, False, "an API key in argv or environment"),
    "managed-flag": (ERROR, False, "an extra_args flag or env variable the plan sets from a field"),
    "unknown-flag": (ERROR, False, "an extra_args flag the pinned vLLM parser refuses (unknown or ambiguous)"),
    "flag-not-recorded": (WARNING, False, "an extra_args flag not in the recorded flag list of vLLM"),
    "config-file-flag": (ERROR, False, "extra_args --config: options from a file preflight cannot check"),
    "secret-in-env": (WARNING, False, "an env name that looks like a secret (TOKEN, SECRET, PASSWORD, KEY)"),
    "example-key": (ERROR, False, "a published example API key outside a lab inventory"),
    "weak-api-key": (ERROR, False, "an API key with whitespace or other non-token characters, or under 32 long"),
    "plain-http-public": (ERROR, False, "the gateway open to non-private networks without TLS"),
    "plain-http-allowed": (WARNING, False, "plain HTTP to non-private networks, allowed explicitly"),
    "deprecated-env": (WARNING, False, "an environment variable the engine ignores"),
    "python-headers": (ERROR, False, "engine build packages without Python headers (Triton JIT)"),
    "glibc-too-old": (ERROR, False, "an engine on a host whose glibc is older than its compiled code needs"),
    "python-unsupported": (ERROR, False, "an engine interpreter outside the engine's Requires-Python"),
    "platform-unchecked": (WARNING, False, "a platform requirement not checked (the host was not read)"),
    "gpu-facts-mismatch": (ERROR, False, "volta_server differs from the GPUs found on the host"),
    # GPU health (_health_rules.py, from the health section of the volta_gpu fact)
    "gpu-missing": (ERROR, False, "fewer GPUs than volta_server.gpu_count, or a GPU in sysfs nvidia-smi lacks"),
    "gpu-pending-retirement": (ERROR, False, "a GPU with memory pages waiting for retirement (reboot first)"),
    "gpu-ecc-uncorrectable": (ERROR, False, "a GPU with uncorrectable volatile ECC errors"),
    "instance-on-failed-gpu": (ERROR, False, "an enabled instance on a GPU the health facts mark failed"),
    "pcie-link-degraded": (WARNING, False, "a GPU's PCIe link trained below its maximum width or generation"),
    "gpu-throttled": (WARNING, False, "hardware slowdown, thermal or power-brake throttling active"),
    "cluster-invalid": (ERROR, False, "a cluster field that is not {members: [2+ hosts], interface: name}"),
    "cluster-not-member": (ERROR, False, "a host that declares a cluster instance but is not one of its members"),
    "cluster-member-unknown": (ERROR, False, "a cluster member not in the inventory or not in this run"),
    "cluster-member-mismatch": (ERROR, False, "a cluster member without the instance, or with other settings"),
    "cluster-gpu-mismatch": (ERROR, False, "cluster members with different GPU models"),
    "cluster-engine-mismatch": (ERROR, False, "cluster members with different engine pins"),
    "cluster-interface": (ERROR, False, "a cluster member without an IPv4 address on the cluster interface"),
    "cluster-engine": (ERROR, False, "a multi-host instance of an engine that cannot run on Ray (llama.cpp)"),
    "cluster-tp-spans-hosts": (WARNING, False, "a tensor-parallel group larger than one member's GPUs"),
    "ray-one-cluster": (ERROR, False, "a host that is a member of two multi-host instances"),
    "ray-port-collision": (ERROR, False, "a Ray port that is also an instance's port"),
    "allow-invalid": (ERROR, False, "an allow entry without rule and reason, or with an unknown rule"),
    "allow-not-overridable": (ERROR, False, "an allow entry for a rule that cannot be overridden"),
    "allow-unused": (WARNING, False, "an allow entry that matches no finding"),
}
OVERRIDABLE = tuple(rule for rule, (_sev, over, _what) in RULES.items() if over)

_VERSION_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_CUDA_TAG_RE = re.compile(r"^cu(\d+)(\d)$")


def parse_version(value):
    """``"2.11.0+cu126"`` -> ``(2, 11, 0)``; ``580`` -> ``(580,)``; ``None`` when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    match = _VERSION_RE.match(str(value))
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def parse_cuda_tag(value):
    """``"cu126"`` -> ``(12, 6)``, ``"cu130"`` -> ``(13, 0)``; ``None`` when unreadable."""
    match = _CUDA_TAG_RE.match(str(value or "").strip().lower())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


def below(cc, limit):
    """True when compute capability tuple *cc* is known and below *limit*."""
    return cc is not None and cc[:2] < limit


def finding(rule, host, instance, field, text, why, fix):
    """One finding. The message names the host, the instance (or host-wide) and the field."""
    severity = RULES[rule][0]
    where = f"instance {instance}" if instance else "host-wide"
    message = f"{host}: {where}: field {field}: {text} Why: {why} Fix: {fix}"
    return {
        "rule": rule,
        "severity": severity,
        "host": host,
        "instance": instance,
        "field": field,
        "message": message,
    }


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


# ---------------------------------------------------------------------------------------------
# Per-instance checks. ``inst`` is a normalised instance from _plan.normalize_instance: every
# known field is present, None where it was missing or invalid (that already gave a finding).
# ``ctx`` holds host, cc (tuple), islands, gpu_count, profiles and the settings.
# ---------------------------------------------------------------------------------------------


def check_instance(inst, ctx):
    findings = []
    for check in _INSTANCE_CHECKS:
        findings.extend(check(inst, ctx))
    return findings


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


def _check_parallel(inst, ctx):
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


def _check_dtype(inst, ctx):
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


def _check_attention(inst, ctx):
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


def _check_quantization(inst, ctx):
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


def _check_model_rules(inst, ctx):
    host, name, family = ctx["host"], inst["name"], inst["model_family"]
    tp, pp, kv, mtp = inst["tensor_parallel"], inst["pipeline_parallel"], inst["kv_cache_dtype"], inst["mtp"]
    extra = inst["extra_args"] or []
    out = []
    nvfp4_moe = family == "moe-nvfp4" or (inst["quantization"] == "nvfp4" and family in MOE_FAMILIES)
    if inst["engine"] == "onecat" and nvfp4_moe and tp is not None:
        ep = has_flag(extra, ("--enable-expert-parallel", "-ep"))
        dp = [v for v in flag_values(extra, ("--data-parallel-size", "-dp")) if v not in ("1", "")]
        if tp not in NVFP4_MOE_TP_SIZES or ep or dp:
            what = f"tensor_parallel {tp}" if tp not in NVFP4_MOE_TP_SIZES else "expert/data parallelism"
            out.append(
                finding(
                    "nvfp4-moe-tp",
                    host,
                    name,
                    "tensor_parallel",
                    f"{what} for an NVFP4 MoE model on 1Cat-vLLM (unverified rule, may be allowed).",
                    "1Cat-vLLM's NVFP4 MoE kernels support tensor parallel sizes (1, 2, 4) only, with no EP or DP.",
                    "run TP=4 instances side by side instead (8 GPUs: two TP=4 instances, 371 tok/s aggregate "
                    "measured), or allow the rule with a reason once a newer 1Cat-vLLM supports it.",
                )
            )
    if family in QWEN_FAMILIES and pp is not None and pp > 1:
        out.append(
            finding(
                "qwen-linear-pp",
                host,
                name,
                "pipeline_parallel",
                f"pipeline_parallel {pp} for model_family {family} (unverified rule, may be allowed).",
                "Qwen's GDN linear + QSA sparse attention cannot split its cache by pipeline stage "
                "('CSA+linear ... cache geometry').",
                "use tensor parallelism only (TP=4, pipeline_parallel: 1).",
            )
        )
    if family in QWEN_FAMILIES and mtp and kv is not None and kv.startswith("fp8"):
        out.append(
            finding(
                "qwen-fp8-kv-mtp",
                host,
                name,
                "kv_cache_dtype",
                f"kv_cache_dtype {kv} together with mtp: true for model_family {family}.",
                "Qwen's QSA attention cannot use an FP8 KV cache with MTP ('QSA E4M3 phase 1 requires MTP0').",
                "set mtp: false when the KV cache is FP8 (the 1M-context configuration), or kv_cache_dtype: auto.",
            )
        )
    if family == "deepseek-v4" and kv is not None and not kv.startswith("fp8"):
        out.append(
            finding(
                "deepseek-v4-kv",
                host,
                name,
                "kv_cache_dtype",
                f"kv_cache_dtype {kv} for model_family deepseek-v4.",
                "'DeepseekV4 only supports fp8 kv-cache'.",
                "set kv_cache_dtype: fp8.",
            )
        )
    mml, seqs = inst["max_model_len"], inst["max_num_seqs"]
    if mml is not None and mml >= LONG_CONTEXT and (seqs is None or seqs > LONG_CONTEXT_MAX_SEQS):
        shown = "unset (the engine default is far above 4)" if seqs is None else str(seqs)
        out.append(
            finding(
                "long-context-seqs",
                host,
                name,
                "max_num_seqs",
                f"max_model_len {mml} with max_num_seqs {shown}.",
                "the 1M-context configuration has almost no GPU memory headroom; the reference server died "
                "at 8 concurrent requests.",
                f"set max_num_seqs: {LONG_CONTEXT_MAX_SEQS} or lower, or a shorter max_model_len.",
            )
        )
    if mtp and tp is not None and tp >= 3 and not ctx["islands"]:
        out.append(
            finding(
                "mtp-pcie-tp",
                host,
                name,
                "mtp",
                f"mtp: true with tensor_parallel {tp} on a PCIe-only host.",
                "with 3+ GPUs on PCIe, custom all-reduce is off and speculative decoding costs more "
                "communication than it saves (measured 37 tok/s with MTP vs 64 without).",
                "set mtp: false.",
            )
        )
    return out


def _check_memory(inst, ctx):
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


# vLLM 0.21.0's own wording (vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len).
def vllm_mbt_below_len_message(mbt, max_model_len):
    return (
        f"max_num_batched_tokens ({mbt}) is smaller than max_model_len ({max_model_len}). This effectively "
        "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
        "Please increase max_num_batched_tokens or decrease max_model_len."
    )


def vllm_mbt_below_seqs_message(mbt, seqs):
    return f"max_num_batched_tokens ({mbt}) must be greater than or equal to max_num_seqs ({seqs})."


def _scheduler_args(inst):
    return list(inst.get("profile_flags") or []) + list(inst["extra_args"] or [])


def _check_scheduler(inst, ctx):
    """What vLLM's SchedulerConfig refuses at start (read from vLLM 0.21.0), before any change."""
    if inst["engine"] not in VLLM_ENGINES:
        return []
    args = _scheduler_args(inst)
    chunked, bad = chunked_prefill(args)
    out = [
        finding(
            "invalid-value",
            ctx["host"],
            inst["name"],
            "extra_args",
            f"{form!r} gives the chunked-prefill switch a value.",
            "the switch takes none; vLLM's parser exits at start: 'vllm serve: error: argument "
            "--enable-chunked-prefill/--no-enable-chunked-prefill: ignored explicit argument ...'.",
            "write --enable-chunked-prefill or --no-enable-chunked-prefill alone.",
        )
        for form in bad
    ]
    out += _check_chunked_mbt(inst, ctx, chunked)
    out += _check_mbt_seqs(inst, ctx, chunked, args)
    out += _check_partial_prefill(inst, ctx, chunked, args)
    return out


def _chunked_off_where(inst):
    return "extra_args" if chunked_prefill(inst["extra_args"] or [])[0] is False else f"the {inst['engine']} profile"


def _chunked_mbt_fix(inst, where, mbt, mml):
    """The ways out, with the ones that apply to where the values come from."""
    ways = []
    if inst.get("mbt_from") == "instance" and inst.get("profile_mbt") is None:
        ways.append("remove max_num_batched_tokens (vLLM then raises it to max_model_len)")
    ways.append(f"set max_num_batched_tokens to at least {mml or 'max_model_len'}")
    if where == "extra_args":
        ways.append("drop --no-enable-chunked-prefill from extra_args (chunked prefill is then on)")
    else:
        ways.append("turn chunked prefill on (extra_args: [--enable-chunked-prefill])")
    ways.append(f"{'set' if mml is None else 'lower'} max_model_len to at most {mbt}")
    return "; or ".join(ways) + "."


def _check_chunked_mbt(inst, ctx, chunked):
    mbt, mml = inst["max_num_batched_tokens"], inst["max_model_len"]
    if chunked is not False or mbt is None or (mml is not None and mbt >= mml):
        return []
    where = _chunked_off_where(inst)
    flag = f"--no-enable-chunked-prefill from {where}"
    if mml is None:
        text = f"max_num_batched_tokens {mbt} with chunked prefill off ({flag}) and max_model_len unset."
        why = (
            "vLLM then takes max_model_len from the model's config.json and refuses to start when "
            f"max_num_batched_tokens is below it: '{vllm_mbt_below_len_message(mbt, 'N')}'"
        )
    else:
        text = f"max_num_batched_tokens {mbt} is below max_model_len {mml} with chunked prefill off ({flag})."
        why = f"vLLM refuses to start (SchedulerConfig): '{vllm_mbt_below_len_message(mbt, mml)}'"
    field = "max_model_len" if mml is None else "max_num_batched_tokens"
    fix = _chunked_mbt_fix(inst, where, mbt, mml)
    return [finding("chunked-prefill-mbt", ctx["host"], inst["name"], field, text, why, fix)]


def _check_mbt_seqs(inst, ctx, chunked, args):
    seqs, mbt = inst["max_num_seqs"], inst["max_num_batched_tokens"]
    if seqs is None:  # vLLM then lowers its default max_num_seqs to max_num_batched_tokens
        return []
    default = mbt is None
    if default:
        mbt = vllm_default_mbt(inst["max_model_len"], seqs, chunked, throughput_mode(args))
    if mbt is None or mbt >= seqs:
        return []
    shown = f"vLLM's default max_num_batched_tokens {mbt}" if default else f"max_num_batched_tokens {mbt}"
    return [
        finding(
            "mbt-below-seqs",
            ctx["host"],
            inst["name"],
            "max_num_seqs",
            f"max_num_seqs {seqs} is above {shown}.",
            f"vLLM refuses to start (SchedulerConfig): '{vllm_mbt_below_seqs_message(mbt, seqs)}'",
            f"lower max_num_seqs to at most {mbt}, or set max_num_batched_tokens to at least {seqs}.",
        )
    ]


def _check_partial_prefill(inst, ctx, chunked, args):
    partial = int_flag(args, ("--max-num-partial-prefills", "--max_num_partial_prefills")) or 1
    long_partial = int_flag(args, ("--max-long-partial-prefills", "--max_long_partial_prefills")) or 1
    threshold = int_flag(args, ("--long-prefill-token-threshold", "--long_prefill_token_threshold")) or 0
    mml = inst["max_model_len"]
    refused = []
    if partial > 1 and chunked is False:
        refused.append("Chunked prefill must be enabled to set max_num_partial_prefills > 1.")
    if partial > 1 and mml is not None and threshold > mml:
        refused.append(
            f"long_prefill_token_threshold ({threshold}) cannot be greater than the max_model_len ({mml})."
        )
    if long_partial > partial:
        refused.append(
            f"self.max_long_partial_prefills={long_partial} must be less than or equal to "
            f"self.max_num_partial_prefills={partial}."
        )
    return [
        finding(
            "partial-prefill",
            ctx["host"],
            inst["name"],
            "extra_args",
            f"--max-num-partial-prefills {partial}, --max-long-partial-prefills {long_partial}, "
            f"--long-prefill-token-threshold {threshold} with chunked prefill "
            f"{'off' if chunked is False else 'on'}.",
            f"vLLM refuses to start (SchedulerConfig): '{text}'",
            "drop the partial-prefill flags from extra_args, or turn chunked prefill on and keep "
            "--max-long-partial-prefills <= --max-num-partial-prefills and the threshold <= max_model_len.",
        )
        for text in refused
    ]


def _check_security(inst, ctx):
    host, name = ctx["host"], inst["name"]
    extra = inst["extra_args"] or []
    env = inst["env"] or {}
    out = []
    for address in flag_values(extra, ("--host",)):
        if not is_loopback(address):
            out.append(
                finding(
                    "bind-non-loopback",
                    host,
                    name,
                    "extra_args",
                    f"--host {address} binds the engine to a non-loopback address.",
                    "vLLM checks the key only on /v1 and leaves /health, /metrics, /tokenize and more open; "
                    "scans found an exposed engine within minutes.",
                    "remove --host from extra_args: the engine listens on 127.0.0.1 and the gateway serves "
                    "the public port with the key.",
                )
            )
        else:
            out.append(_managed(ctx, name, "--host", "bind_host (always 127.0.0.1)"))
    if has_flag(extra, ("--api-key", "--api-key-file")):
        out.append(
            finding(
                "secret-in-plan",
                host,
                name,
                "extra_args",
                "extra_args passes an API key (--api-key / --api-key-file).",
                "a key on the command line is visible to every local user in the process list and in unit files.",
                "remove it and set api_gateway_keys: the key reaches the engine from a root-only "
                "EnvironmentFile (vLLM) or key file (llama.cpp).",
            )
        )
    for key in sorted(env):
        if "API_KEY" in key.upper():
            out.append(
                finding(
                    "secret-in-plan",
                    host,
                    name,
                    "env",
                    f"env sets {key}.",
                    "the environment of the unit is readable in the unit file and by systemctl show.",
                    "remove it and set api_gateway_keys (the key goes to a root-only EnvironmentFile).",
                )
            )
        if key == "VLLM_ATTENTION_BACKEND":
            out.append(
                finding(
                    "deprecated-env",
                    host,
                    name,
                    "env",
                    "env sets VLLM_ATTENTION_BACKEND.",
                    "current vLLM ignores it (deprecated); the attention backend is a command-line flag.",
                    "remove it; put --attention-backend in extra_args if the profile's backend is not wanted.",
                )
            )
    # An instance whose name was refused has its own error; "add None to api_gateway_keys" would be a second one.
    key = inst.get("key_name") or name
    # A cluster's worker serves nothing itself: the head's gateway takes the requests.
    if inst["enabled"] and name and inst.get("cluster_role") != "worker" and not _has_key(key, ctx):
        out.append(
            finding(
                "no-api-key",
                host,
                name,
                "api_gateway_keys",
                "no API key is configured for this instance"
                + (f" (a replica of the service {key}: its key is api_gateway_keys[{key}])." if key != name else "."),
                "without a key anyone who reaches the public port can use the model.",
                f"add {key} to api_gateway_keys (in Ansible Vault), set api_gateway_host_key, "
                "or set api_gateway_generate_keys: true.",
            )
        )
    return out


def _has_key(name, ctx):
    return bool(ctx["generate_keys"] or ctx["host_key"] or name in ctx["keyed_instances"])


def _managed(ctx, name, flag, field):
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
            out.append(_managed(ctx, inst["name"], flag, field))
    for key, field in managed_env.items():
        if key in (inst["env"] or {}):
            out.append(_managed(ctx, inst["name"], key, field))
    return out


_INSTANCE_CHECKS = (
    _check_parallel,
    _check_dtype,
    _check_attention,
    _check_quantization,
    _check_model_rules,
    _check_memory,
    _check_scheduler,
    _check_security,
)


# ---------------------------------------------------------------------------------------------
# Host-wide checks: GPUs shared, ports, software versions, RAM, detected GPUs.
# ---------------------------------------------------------------------------------------------


def check_gpus(instances, ctx):
    host, count = ctx["host"], ctx["gpu_count"]
    out = []
    used = {}
    for inst in instances:
        gpus = inst["gpus"]
        if gpus is None:
            continue
        seen = set()
        for gpu in gpus:
            if count is not None and not 0 <= gpu < count:
                out.append(
                    finding(
                        "gpu-out-of-range",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} does not exist: volta_server.gpu_count is {count} (indexes 0-{count - 1}).",
                        "CUDA_VISIBLE_DEVICES with a missing index hides every GPU after it.",
                        f"use indexes between 0 and {count - 1}.",
                    )
                )
            if gpu in seen:
                out.append(
                    finding(
                        "gpu-duplicate",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} is listed twice.",
                        "each worker of the engine needs a GPU of its own.",
                        "list each GPU once.",
                    )
                )
            seen.add(gpu)
            if inst["enabled"] and gpu in used and used[gpu] != inst["name"]:
                out.append(
                    finding(
                        "gpu-shared",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} is also used by instance {used[gpu]}.",
                        "each engine reserves gpu_memory_utilization of the whole GPU; two engines on one GPU "
                        "run out of memory at start.",
                        "give each enabled instance its own GPUs, or set enabled: false on one of them.",
                    )
                )
            elif inst["enabled"]:
                used.setdefault(gpu, inst["name"])
    return out


def check_ports(instances, ctx):
    host = ctx["host"]
    out = []
    owners = {}
    ssh = ctx["ssh_port"]
    if ssh is not None:
        owners[ssh] = ("SSH (firewall_ssh_port)", None)
    for port, what in sorted(ctx["reserved_ports"].items()):
        owners.setdefault(port, (f"reserved port of {what}", None))
    for inst in instances:
        for field, port, label in (
            ("port", inst["port"], "the gateway's public port"),
            ("backend_port", inst["backend_port"], "the engine's loopback port"),
            ("service_port", inst.get("service_port"), f"the public port of the service {inst['served_model_name']}"),
        ):
            if port is None:
                continue
            if not 1 <= port <= 65535 or (field == "backend_port" and port < 1024):
                out.append(
                    finding(
                        "port-invalid",
                        host,
                        inst["name"],
                        field,
                        f"{field} {port} is not usable"
                        + (" (port + 10000 unless backend_port is set)." if field == "backend_port" else "."),
                        "ports are 1-65535, and the engine runs as an unprivileged user that cannot bind below 1024.",
                        "choose a port below 55536 (so that port + 10000 fits) or set backend_port.",
                    )
                )
                continue
            if not inst["enabled"]:
                continue
            # The replicas of one service share its port: the owner is the service, not the instance.
            who = ("service", inst["served_model_name"]) if field == "service_port" else (inst["name"], field)
            if port in owners and owners[port][1] != who:
                owner = owners[port][0]
                out.append(
                    finding(
                        "port-collision",
                        host,
                        inst["name"],
                        field,
                        f"{field} {port} ({label}) is already taken by {owner}.",
                        "two listeners cannot share a port: one of the services fails to start.",
                        "choose another port; every instance needs a public port and a backend port "
                        "that no other instance, the gateway or SSH uses.",
                    )
                )
            else:
                owners[port] = (label if field == "service_port" else f"{label} of instance {inst['name']}", who)
    return out


def check_software(instances, ctx):
    """Host-wide software rules on SM70: driver, CUDA toolkit, the engines' torch builds, headers."""
    if not below(ctx["cc"], SM70_BELOW):
        return []
    return (
        _check_driver(ctx)
        + _check_cuda_toolkit(ctx)
        + [item for engine in _vllm_engines(instances) for item in _check_torch_build(engine, ctx)]
        + _check_build_packages(instances, ctx)
    )


def _vllm_engines(instances):
    return sorted({inst["engine"] for inst in instances if inst["engine"] in VLLM_ENGINES})


def _check_driver(ctx):
    host, out = ctx["host"], []
    branch = parse_version(ctx["driver_branch"])
    if branch is None:
        out.append(
            finding(
                "invalid-value",
                host,
                None,
                "nvidia_driver_branch",
                f"nvidia_driver_branch {ctx['driver_branch']!r} is not a version.",
                "the rules compare it with 580, the last branch for Volta.",
                'set nvidia_driver_branch: "580".',
            )
        )
    elif branch[0] > LAST_VOLTA_DRIVER_BRANCH:
        out.append(
            finding(
                "driver-branch-above-580",
                host,
                None,
                "nvidia_driver_branch",
                f"driver branch {ctx['driver_branch']} on compute capability {ctx['cc_text']}.",
                "580 is the last driver branch that supports Volta; newer drivers find no usable GPU.",
                'set nvidia_driver_branch: "580".',
            )
        )
    return out + _check_kernel_module(ctx)


def _check_kernel_module(ctx):
    host, module = ctx["host"], str(ctx["driver_kernel_module"])
    if module == "open":
        return [
            finding(
                "driver-open-modules",
                host,
                None,
                "nvidia_driver_kernel_module",
                f"the open kernel modules on compute capability {ctx['cc_text']}.",
                "the open NVIDIA kernel modules support Turing and newer only.",
                "set nvidia_driver_kernel_module: proprietary.",
            )
        ]
    if module != "proprietary":
        return [
            finding(
                "unknown-value",
                host,
                None,
                "nvidia_driver_kernel_module",
                f"nvidia_driver_kernel_module {ctx['driver_kernel_module']!r} is neither proprietary nor open.",
                "the driver role installs one of the two.",
                "set nvidia_driver_kernel_module: proprietary.",
            )
        ]
    return []


def _check_cuda_toolkit(ctx):
    host = ctx["host"]
    cuda = parse_version(ctx["cuda_version"])
    if cuda is None:
        return [
            finding(
                "invalid-value",
                host,
                None,
                "cuda_toolkit_version",
                f"cuda_toolkit_version {ctx['cuda_version']!r} is not a version.",
                "the rules compare it with 13, the first CUDA without SM70.",
                'set cuda_toolkit_version: "12.8".',
            )
        ]
    if cuda[0] >= FIRST_CUDA_WITHOUT_SM70:
        return [
            finding(
                "cuda-13-on-sm70",
                host,
                None,
                "cuda_toolkit_version",
                f"CUDA {ctx['cuda_version']} on compute capability {ctx['cc_text']}.",
                "CUDA 13 removed offline compilation for SM70 (nvcc fatal: Unsupported gpu architecture "
                "'compute_70'); Triton, llama.cpp and the patches need it.",
                'set cuda_toolkit_version: "12.8".',
            )
        ]
    return []


def torch_keeps_sm70(torch_version, cuda_tag):
    """Whether the official torch *torch_version* wheels of index *cuda_tag* carry sm_70 kernels.

    ``True`` or ``False`` where recorded (``TORCH_SM70_BUILDS``; every cu13x is ``False``), ``None``
    where not known (or either value is unreadable).
    """
    torch_v, tag = parse_version(torch_version), parse_cuda_tag(cuda_tag)
    if torch_v is None or tag is None:
        return None
    if tag[0] >= FIRST_CUDA_WITHOUT_SM70:
        return False
    return TORCH_SM70_BUILDS.get(torch_v[:2], {}).get(f"cu{tag[0]}{tag[1]}")


def sm70_cuda_tags(torch_version):
    """The CUDA tags whose wheels of *torch_version* are recorded to keep sm_70 (``[]`` when none)."""
    torch_v = parse_version(torch_version)
    builds = TORCH_SM70_BUILDS.get(torch_v[:2] if torch_v else None, {})
    return sorted(tag for tag, keeps in builds.items() if keeps)


def _sm70_alternatives(engine, torch):
    tags = sm70_cuda_tags(torch)
    if tags:
        return f"use a build of torch {torch} that keeps sm_70 (engine_{engine}_torch_cuda: {' or '.join(tags)})"
    return f"use the cu126 build (engine_{engine}_torch_cuda: cu126), which keeps Volta through 2.14"


def _check_torch_build(engine, ctx):
    host = ctx["host"]
    versions = ctx["engine_versions"].get(engine, {})
    torch, tag = versions.get("torch_version"), versions.get("torch_cuda")
    torch_v, cuda_tag = parse_version(torch), parse_cuda_tag(tag)
    if torch_v is None or cuda_tag is None:
        return [
            finding(
                "invalid-value",
                host,
                None,
                f"engine_{engine}_torch_cuda" if cuda_tag is None else f"engine_{engine}_torch_version",
                f"torch {torch!r} / CUDA tag {tag!r} for {engine} cannot be read.",
                "the rules need both to know whether the wheel has sm_70 kernels.",
                f"set engine_{engine}_torch_version (e.g. 2.11.0) and engine_{engine}_torch_cuda (e.g. cu126).",
            )
        ]
    keeps = torch_keeps_sm70(torch, tag)
    if keeps is False:
        return [
            finding(
                "torch-without-sm70",
                host,
                None,
                f"engine_{engine}_torch_cuda",
                f"torch {torch}+{tag} for {engine} has no sm_70 kernels.",
                f"PyTorch builds its torch {torch_v[0]}.{torch_v[1]} {tag} wheels without Volta (arch list starts "
                f"at sm_75; recorded from {TORCH_SM70_SOURCE}); CUDA kernels fail with "
                "'no kernel image is available'.",
                f"{_sm70_alternatives(engine, torch)}, or torch 2.10 with cu128 (1Cat-vLLM).",
            )
        ]
    if keeps is None:
        return [
            finding(
                "torch-sm70-unknown",
                host,
                None,
                f"engine_{engine}_torch_cuda",
                f"whether torch {torch}+{tag} for {engine} has sm_70 kernels is not known; "
                "the binary audit after install decides.",
                f"volta.serving records which torch builds keep sm_70 from {TORCH_SM70_SOURCE}, "
                f"and torch {torch_v[0]}.{torch_v[1]} {tag} is not among them.",
                f"{_sm70_alternatives(engine, torch)}; or keep it and let the smoke test's arch check and "
                "binary audit refuse the install if sm_70 is missing.",
            )
        ]
    return []


def _check_build_packages(instances, ctx):
    packages = ctx["build_packages"]
    if packages is None or not instances:
        return []
    if any(re.match(r"^python3(\.\d+)?-dev$", str(p)) for p in packages):
        return []
    return [
        finding(
            "python-headers",
            ctx["host"],
            None,
            "engine_build_packages",
            f"engine_build_packages {list(packages)} has no python3.X-dev package.",
            "Triton JIT-compiles a helper on first start and fails with 'Python.h: No such file "
            "or directory' without the headers.",
            "add the -dev package of the engine's Python (Debian 12: python3.11-dev, Ubuntu 22.04: python3.10-dev, "
            "Ubuntu 24.04: python3.12-dev), build-essential and ninja-build.",
        )
    ]


def check_ram(instances, ctx):
    ram = ctx["ram_gb"]
    if ram is None:
        return []
    need_by_family = {**HOST_RAM_NEED_GB, **ctx["ram_need_gb"]}
    enabled = [inst for inst in instances if inst["enabled"] and inst["model_family"] in need_by_family]
    if not enabled:
        return []
    parts = [(inst["name"], need_by_family[inst["model_family"]]) for inst in enabled]
    need = HOST_RAM_RESERVE_GB + sum(gb for _name, gb in parts)
    if ram >= need:
        return []
    detail = ", ".join(f"{name} {gb} GB" for name, gb in parts)
    return [
        finding(
            "host-ram",
            ctx["host"],
            None,
            "volta_server.ram_gb",
            f"ram_gb {ram} is below the {need} GB the enabled instances need ({detail}, "
            f"+{HOST_RAM_RESERVE_GB} GB for the host).",
            "Qwen3.8-Flash-Next-style models offload ~48 GB of n-gram embeddings per instance to host RAM; "
            "an engine that runs out of host RAM is killed by the OOM killer.",
            "add RAM, disable an instance, or correct preflight_host_ram_need_gb for the model.",
        )
    ]


def check_gpu_facts(facts, server, ctx):
    """Compare detected GPUs (the volta_gpu fact, status ok) with volta_server, like the role does."""
    if not isinstance(facts, dict) or facts.get("status") != "ok":
        return []
    host = ctx["host"]
    out = []

    def mismatch(field, said, found):
        out.append(
            finding(
                "gpu-facts-mismatch",
                host,
                None,
                f"volta_server.{field}",
                f"volta_server says {said}, the host has {found}.",
                "the serving plan (GPU indexes, TP groups, SM70 rules) is built from volta_server.",
                f"correct volta_server.{field} in host_vars/{host}.yml, or the hardware.",
            )
        )

    if facts.get("gpu_count") != server.get("gpu_count"):
        mismatch("gpu_count", server.get("gpu_count"), facts.get("gpu_count"))
    gpus = facts.get("gpus") or []
    models = sorted({gpu.get("name") for gpu in gpus})
    if models != [server.get("gpu_model")]:
        mismatch("gpu_model", server.get("gpu_model"), ", ".join(map(str, models)))
    caps = sorted({str(gpu.get("compute_capability")) for gpu in gpus})
    if caps != [str(server.get("compute_capability"))]:
        mismatch("compute_capability", server.get("compute_capability"), ", ".join(caps))
    want = sorted(sorted(island) for island in server.get("nvlink_islands") or [])
    found = sorted(sorted(island) for island in facts.get("nvlink_islands") or [])
    if want != found:
        mismatch("nvlink_islands", want, found)
    cc = parse_version(facts.get("min_compute_capability"))
    if below(cc, SM70_BELOW):
        branch = parse_version(facts.get("driver_version"))
        if branch and branch[0] > LAST_VOLTA_DRIVER_BRANCH:
            out.append(
                finding(
                    "driver-branch-above-580",
                    host,
                    None,
                    "volta_gpu.driver_version",
                    f"driver {facts.get('driver_version')} is installed on compute capability "
                    f"{facts.get('min_compute_capability')}.",
                    "580 is the last driver branch that supports Volta.",
                    "install the 580 branch (the nvidia_driver role) and hold it.",
                )
            )
        if facts.get("kernel_module") == "open":
            out.append(
                finding(
                    "driver-open-modules",
                    host,
                    None,
                    "volta_gpu.kernel_module",
                    "the loaded NVIDIA kernel module is the open one.",
                    "the open NVIDIA kernel modules support Turing and newer only.",
                    "install the proprietary modules (nvidia_driver_kernel_module: proprietary).",
                )
            )
    return out


def apply_allow(findings, instances, host):
    """Downgrade findings allowed on purpose; report bad and unused allow entries."""
    out = list(findings)
    extra = []
    for inst in instances:
        for index, entry in enumerate(inst.get("allow") or []):
            field = f"allow[{index}]"
            rule = entry.get("rule") if isinstance(entry, dict) else None
            reason = entry.get("reason") if isinstance(entry, dict) else None
            if not isinstance(rule, str) or rule not in RULES or not isinstance(reason, str) or not reason.strip():
                extra.append(
                    finding(
                        "allow-invalid",
                        host,
                        inst["name"],
                        field,
                        f"allow entry {entry!r} needs a known rule id and a non-empty reason.",
                        "an override is only accepted with the reason it is safe, which the output logs.",
                        f"write {{rule: ID, reason: \"...\"}}; overridable rules: {', '.join(OVERRIDABLE)}.",
                    )
                )
                continue
            if rule not in OVERRIDABLE:
                extra.append(
                    finding(
                        "allow-not-overridable",
                        host,
                        inst["name"],
                        field,
                        f"rule {rule} cannot be allowed.",
                        "only rules that rest on unverified reports may be overridden; the others are known "
                        "failures on V100.",
                        f"fix what the rule reports; overridable rules: {', '.join(OVERRIDABLE)}.",
                    )
                )
                continue
            matched = False
            for item in out:
                if item["rule"] == rule and item["instance"] == inst["name"] and item["severity"] != ALLOWED:
                    item["severity"] = ALLOWED
                    item["reason"] = reason.strip()
                    item["message"] += f" Allowed on purpose: {reason.strip()}"
                    matched = True
            if not matched:
                extra.append(
                    finding(
                        "allow-unused",
                        host,
                        inst["name"],
                        field,
                        f"allow entry for {rule} matches no finding.",
                        "a stale override hides the rule the day the configuration changes back.",
                        "remove the entry.",
                    )
                )
    return out + extra


# Platform rules (glibc, Python): data in module_utils/_python.py. ctx["platform"] is None when the
# caller passed no host platform (no such check), else {distribution, version, glibc, note}; glibc is
# None when it was not read (note says why).
PYTHON_VARIABLES = {"vllm": "engine_python", "onecat": "engine_onecat_python"}


def check_platform(instances, ctx):
    """The engines' glibc floors and interpreters on this host's platform."""
    engines = _vllm_engines(instances)
    out = []
    for engine in engines:
        out += _check_glibc(engine, [i for i in instances if i["engine"] == engine], ctx)
        out += _check_python(engine, ctx)
    return out


def _check_glibc(engine, instances, ctx):
    need, platform = _python.ENGINE_GLIBC.get(engine), ctx.get("platform")
    if need is None or platform is None:
        return []
    host, found = ctx["host"], _python.parse_glibc(platform.get("glibc"))
    os_text = _python.platform_text(platform.get("distribution"), platform.get("version"))
    if found is None:
        return [finding(
            "platform-unchecked", host, inst["name"], "engine",
            f"{_python.ENGINE_NAMES[engine]} needs glibc >= {need['min']}; the glibc of this host was not "
            f"checked ({platform.get('note') or 'unreadable: ' + repr(platform.get('glibc'))}).",
            need["why"] + ".",
            "run preflight against the host (volta_preflight_detect=true), or check `getconf GNU_LIBC_VERSION` "
            f"on it yourself: {need['fix']} where it is older.",
        ) for inst in instances]
    if not _python.glibc_below(found, need["min"]):
        return []
    return [finding(
        "glibc-too-old", host, inst["name"], "engine",
        f"{_python.ENGINE_NAMES[engine]} needs glibc >= {need['min']}, but {os_text} has glibc {found}.",
        need["why"] + ".",
        need["fix"] + ".",
    ) for inst in instances]


def _check_python(engine, ctx):
    versions = ctx["engine_versions"].get(engine, {})
    platform = ctx.get("platform") or {}
    variable = PYTHON_VARIABLES[engine]
    explicit = (ctx.get("engine_pythons") or {}).get(engine) or ""
    if not explicit and not platform:
        return []  # auto needs the platform; without it the engine role decides on the host
    try:
        _python.choose({
            "distribution": platform.get("distribution"), "version": platform.get("version"), "engine": engine,
            "engine_version": versions.get("version"), "torch_version": versions.get("torch_version"),
            "wheel": ctx.get("onecat_wheel"), "explicit": explicit, "variable": variable,
            "uv_version": ctx.get("uv_python") or _python.DEFAULT_UV_PYTHON,
        })
    except _python.PythonChoiceError as exc:
        text, _sep, fix = str(exc).partition(" Fix: ")
        return [finding(
            "python-unsupported", ctx["host"], None, variable, text.rstrip(".") + ".",
            "the engine and its torch publish no build for that Python (Requires-Python), so the install fails "
            "or the engine does not import.",
            (fix or "correct the interpreter").rstrip(".") + ".",
        )]
    return []
