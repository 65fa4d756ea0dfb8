# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model-aware rules: what an instance's checkpoint (read by volta.serving.model_facts) allows.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection.
``_plan.build_report`` calls ``infer_families`` (model_family from the checkpoint where the
inventory leaves it out) and ``check_models`` when it is given the ``volta_checkpoints`` facts; without
them (a controller-only run) none of these rules runs.

What vLLM refuses, and its wording, is read from the real vLLM 0.21.0 release:
``vllm/config/model.py`` (``ModelConfig.verify_with_parallel_config``, ``_get_and_verify_max_len``,
``_get_and_verify_dtype``), ``vllm/transformers_utils/model_arch_config_convertor.py``
(``derive_max_model_len_and_key``), ``vllm/model_executor/layers/linear.py`` (``QKVParallelLinear``
splits or replicates the KV heads with ``divide``), ``vllm/config/vllm.py`` (the quantization
method's minimum capability) and each quantization config's ``get_min_capability``.
"""

from __future__ import annotations

import math
import re

from ansible_collections.volta.serving.plugins.module_utils._model import token_transport_problem
from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    BF16_DTYPES,
    FLASH_ATTENTION_MIN,
    ONECAT_ONLY_QUANTIZATIONS,
    SM70_BELOW,
    VLLM_ENGINES,
    below,
)

# id: (severity, overridable, what it is about). The registry (_rules.RULES) assembles it with every other
# layer's, so that findings and allow entries know them like every other rule.
MODEL_RULES = {
    "model-missing": (ERROR, False, "an instance's local model path does not exist on the host"),
    "model-config": (ERROR, False, "a model directory without a readable config.json (vLLM engines)"),
    "model-hub-unread": (WARNING, False, "a hub model source whose metadata could not be read before download"),
    "model-hf-endpoint": (ERROR, False, "model_hf_endpoint not an http(s) URL, or plain http with a model's token"),
    "heads-tp": (ERROR, False, "attention heads not divisible by tensor_parallel"),
    "kv-heads-tp": (ERROR, False, "KV heads and tensor_parallel: neither divides the other"),
    "max-model-len-model": (ERROR, False, "max_model_len above the length the model's config.json allows"),
    "bf16-checkpoint-half": (WARNING, False, "a bfloat16 checkpoint served as float16 on SM70"),
    "quantization-mismatch": (ERROR, False, "the declared quantization contradicts the checkpoint"),
    "model-family-mismatch": (ERROR, False, "the declared model_family contradicts the checkpoint"),
    "weights-fit": (ERROR, False, "the weights per GPU exceed the GPU memory the engine may use"),
}

GIB = 1024**3
GB = 1000**3
# A gpu_model without a size: every V100 of the reference servers has 32 GB. A name that gives one
# ("Tesla V100-PCIE-16GB", "Tesla V100-SXM2-16GB", "Tesla V100S-PCIE-32GB") gives the size.
DEFAULT_GPU_MEMORY_GIB = 32
_GPU_MEMORY_RE = re.compile(r"(?<![\d.])(\d+)\s*GB\b", re.I)

# Architectures with DeepSeek's multi-head latent attention (vLLM's MLA kernels need Hopper). A
# config.json with kv_lora_rank is MLA as well; llama.cpp names DeepSeek V2/V3 GGUFs "deepseek2".
MLA_ARCHITECTURES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
MLA_GGUF_ARCHITECTURES = ("deepseek2",)
# GDN linear attention (Qwen3-Next and the Qwen3.8-Flash-Next of the reference server).
LINEAR_ARCHITECTURES = ("Qwen3NextForCausalLM",)
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")

# The minimum compute capability of each quantization method in vLLM 0.21.0 (get_min_capability of
# its config class; compressed-tensors per scheme: wNa16 7.5, NVFP4 7.5, FP8 7.5/8.9, MXFP4 8.0).
# GPTQ is absent on purpose: its `gptq` method (exllama kernels) takes 6.0, so vLLM serves a GPTQ
# checkpoint on SM70 (only gptq_marlin needs 7.5).
VLLM_QUANT_MIN_CAPABILITY = {
    "awq": "7.5",
    "fp8": "7.5",
    "nvfp4": "7.5",
    "mxfp4": "8.0",
    "compressed-tensors": "7.5",
}
# compressed-tensors' "format" -> the quantization it holds.
COMPRESSED_TENSORS_FORMATS = {
    "nvfp4-pack-quantized": "nvfp4",
    "mxfp4-pack-quantized": "mxfp4",
    "float-quantized": "fp8",
    "naive-quantized": "fp8",
}
# Host-offloaded parts of a checkpoint, in GB, by model family: they are in the checkpoint's size
# but not on the GPUs. Qwen3.8-Flash-Next (moe-nvfp4) keeps its ~48 GB of n-gram embeddings (PLE)
# in host RAM (seed 002); the host-ram rule counts them there.
OFFLOADED_GB = {"moe-nvfp4": 48}
# Keys vLLM 0.21.0 reads for the model's own maximum length, in its order (the smallest wins,
# then model_max_length replaces it when set).
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose factor vLLM does not multiply the length by.
ROPE_UNSCALED = ("su", "longrope", "llama3")


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def text_config(config):
    """The language model's part of a config.json (``text_config`` of a multimodal model)."""
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def checkpoint_quantization(config):
    """``(name, method)``: the quantization of a checkpoint from its quantization_config.

    *name* is one of volta.serving's quantizations (``awq``, ``gptq``, ``fp8``, ``nvfp4``,
    ``mxfp4``) when the method says which, else the method itself; ``("none", None)`` without a
    quantization_config.
    """
    qc = (config or {}).get("quantization_config")
    if not isinstance(qc, dict):
        return "none", None
    method = str(qc.get("quant_method") or "").lower()
    if method in ("awq", "awq_marlin"):
        return "awq", method
    if method in ("gptq", "gptq_marlin"):
        return "gptq", method
    if method in ("fp8", "mxfp4"):
        return method, method
    if method.startswith("modelopt"):
        algo = str(qc.get("quant_algo") or "").upper()
        return ("nvfp4" if "FP4" in algo or method == "modelopt_fp4" else "fp8" if "FP8" in algo else method), method
    if method == "compressed-tensors":
        return COMPRESSED_TENSORS_FORMATS.get(str(qc.get("format") or ""), method), method
    return method or "none", method or None


def _features(facts):
    """What the checkpoint is: a set of ``mla``, ``moe``, ``linear``; None when nothing was read."""
    arch = facts.get("gguf_architecture")
    config = facts.get("config")
    if isinstance(config, dict):
        text = text_config(config)
        names = [str(a) for a in config.get("architectures") or []]
        out = set()
        if any(a in MLA_ARCHITECTURES for a in names) or text.get("kv_lora_rank"):
            out.add("mla")
        if any(_count(text.get(key)) for key in EXPERT_KEYS) or any("Moe" in a for a in names):
            out.add("moe")
        layer_types = text.get("layer_types") or []
        if any(a in LINEAR_ARCHITECTURES for a in names) or "linear_attention" in layer_types:
            out.add("linear")
        return out
    if arch:
        out = {"mla"} if arch in MLA_GGUF_ARCHITECTURES else set()
        return out | ({"moe"} if "moe" in arch else set())
    return None


def infer_family(facts):
    """The model_family a checkpoint's config.json (or GGUF header) implies; None when unknown."""
    features = _features(facts)
    if features is None:
        return None
    quant = checkpoint_quantization(facts.get("config"))[0]
    if "mla" in features:
        return "deepseek-mla"
    if "linear" in features:
        return "moe-nvfp4" if quant == "nvfp4" and "moe" in features else "qwen-linear"
    return "moe" if "moe" in features else "dense"


def family_contradiction(declared, facts):
    """Why *declared* does not describe the checkpoint, or None (deepseek-v4 is never contradicted)."""
    features = _features(facts)
    if features is None or declared == "deepseek-v4":
        return None
    needs = {"dense": set(), "moe": {"moe"}, "moe-nvfp4": {"moe"}, "qwen-linear": {"linear"}, "deepseek-mla": {"mla"}}
    missing = needs.get(declared, set()) - features
    if missing:
        return f"the checkpoint has no {', '.join(sorted(missing))} layers"
    extra = {"mla"} & features if declared != "deepseek-mla" else set()
    if declared == "dense":
        extra = features
    if extra:
        return f"the checkpoint has {', '.join(sorted(extra))} layers"
    return None


def infer_families(instances, model_facts):
    """Set model_family from the checkpoint where the inventory leaves it out (``model_family_from``)."""
    for inst in instances:
        inst.setdefault("model_family_from", "inventory" if inst.get("model_family_given") else "default")
        facts = (model_facts or {}).get(inst.get("model")) or {}
        if inst.get("model_family_given") or not facts.get("exists"):
            continue
        family = infer_family(facts)
        if family:
            inst["model_family"], inst["model_family_from"] = family, "checkpoint"


def _rope_entries(text):
    """The RoPE parameter sets of a config (transformers' rope_scaling or rope_parameters)."""
    rope = text.get("rope_parameters") or text.get("rope_scaling")
    if not isinstance(rope, dict):
        return []
    if rope and all(isinstance(v, dict) for v in rope.values()):
        return list(rope.values())
    return [rope]


def derived_max_len(config, tokenizer_max_length=None):
    """``(length, key, model_max_length)``: the longest max_model_len vLLM 0.21.0 accepts.

    Restates ``_get_and_verify_max_len``: the smallest of MAX_LEN_KEYS, replaced by
    ``model_max_length`` when set, capped by the tokenizer's ``model_max_length``, multiplied by the
    RoPE scaling factor (for yarn: ``original_max_position_embeddings`` x factor; not for su,
    longrope, llama3; not for Gemma 3). ``(None, None, None)`` when no key is there (vLLM then
    accepts any max_model_len).
    """
    text = text_config(config)
    derived, key = math.inf, None
    for name in MAX_LEN_KEYS:
        value = text.get(name)
        if _number(value):
            if value < derived:
                key = name
            derived = min(derived, value)
    model_max = text.get("model_max_length") if _number(text.get("model_max_length")) else None
    if model_max:
        derived, key = model_max, "model_max_length"
    if _number(tokenizer_max_length):
        derived = min(derived, tokenizer_max_length)
    if derived == math.inf:
        return None, None, None
    # transformers 5 gives every config with rope_theta RoPE parameters (type default), so vLLM
    # multiplies by 1.0 and shows the length as a float (32768.0) even without rope_scaling.
    entries = _rope_entries(text) or ([{"rope_type": "default"}] if _number(text.get("rope_theta")) else [])
    if entries and "gemma3" not in str(text.get("model_type", "")):
        factor = 1.0
        for rope in entries:
            kind = rope.get("rope_type") or rope.get("type") or "default"
            if kind not in ROPE_UNSCALED:
                factor = rope.get("factor", factor)
                if kind == "yarn" and _number(rope.get("original_max_position_embeddings")):
                    derived = rope["original_max_position_embeddings"]
        derived *= factor if _number(factor) else 1.0  # an int factor keeps an int (vLLM prints 163840)
    return derived, key, model_max


def vllm_max_len_message(max_model_len, derived, key, model_max):
    """vLLM 0.21.0's words when max_model_len is above the derived length (the first sentence)."""
    return (
        f"User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        f"({key}={derived} or model_max_length={model_max} in model's config.json)."
    )


def gpu_memory_gib(server):
    """GiB of one GPU from volta_server.gpu_model: the number before 'GB' in the name, else 32."""
    match = _GPU_MEMORY_RE.search(str((server or {}).get("gpu_model") or ""))
    return int(match.group(1)) if match else DEFAULT_GPU_MEMORY_GIB


def detected_memory_gib(gpu_facts, indexes=()):
    """GiB of the smallest of the GPUs *indexes* (all GPUs when none of them is listed) as nvidia-smi's
    memory.total reports it in the volta_gpu fact, or None when the fact has no GPUs (not read)."""
    if not isinstance(gpu_facts, dict) or gpu_facts.get("status") != "ok":
        return None
    sizes = {gpu.get("index"): gpu.get("memory_total_mib") for gpu in gpu_facts.get("gpus") or []
             if isinstance(gpu, dict) and _number(gpu.get("memory_total_mib"))}
    picked = [sizes[i] for i in indexes if i in sizes] or list(sizes.values())
    return min(picked) / 1024 if picked else None


def gpu_memory(server, gpu_facts=None, indexes=()):
    """``(GiB of one GPU, where the number comes from)``: the GPUs read on the host (memory.total) when
    they were read, else the gpu_model name, else 32 GiB."""
    detected = detected_memory_gib(gpu_facts, indexes)
    if detected is not None:
        return detected, "nvidia-smi memory.total"
    model = str((server or {}).get("gpu_model") or "")
    if _GPU_MEMORY_RE.search(model):
        return gpu_memory_gib(server), f"gpu_model {model}"
    return DEFAULT_GPU_MEMORY_GIB, "no size in gpu_model, assumed"


def _gib(value):
    """A GiB figure as the messages print it: 16, 31.7."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def tp_choices(heads, kv_heads, limit):
    """The tensor_parallel sizes up to *limit* that vLLM accepts for these head counts."""
    out = []
    for tp in range(1, max(limit, 1) + 1):
        if heads and heads % tp:
            continue
        if kv_heads and kv_heads % tp and tp % kv_heads:
            continue
        out.append(tp)
    return out


def check_models(instances, ctx, server, model_facts, gpu_facts=None):
    """Every model rule for the instances whose model path was read on the host.

    *gpu_facts* (the volta_gpu fact, when the GPUs were read) gives each GPU's memory to weights-fit;
    without it the memory comes from volta_server.gpu_model."""
    if model_facts is None:
        return []
    out = []
    for inst in instances:
        facts = model_facts.get(inst.get("model")) if inst.get("model") else None
        if inst.get("engine") is None or not isinstance(facts, dict) or not facts.get("local"):
            continue
        if facts.get("pending"):
            continue  # a url source the model layer downloads later in this run, checked on the next
        if facts.get("hub_error"):
            out.append(_hub_unread(inst, ctx, facts))
            continue
        if not facts.get("exists"):
            out.append(_missing(inst, ctx))
            continue
        out += _check_shape(inst, ctx, facts)
        if isinstance(facts.get("config"), dict) and inst["engine"] in VLLM_ENGINES:
            for check in (_check_heads, _check_max_len, _check_bf16, _check_checkpoint_quant, _check_mla):
                out += check(inst, ctx, facts)
        out += _check_declared(inst, ctx, facts)
        out += _check_fit(inst, ctx, server, facts, gpu_facts)
    return out


def _hub_models(models):
    """``(names, with_token)``: the hf sources of volta_models, and those of them with a token (sorted)."""
    hf = {name: source["hf"] for name, source in (models.items() if isinstance(models, dict) else ())
          if isinstance(source, dict) and isinstance(source.get("hf"), dict)}
    return sorted(hf, key=str), sorted((name for name, given in hf.items() if given.get("token")), key=str)


def hf_endpoint(host, models, endpoint, lab=False):
    """model_hf_endpoint: an http(s) URL where a model comes from the hub; https where one has a token.

    *lab* (volta_lab): the lab's stand-in hub serves plain http to its stand-in token, which is allowed there.

    Preflight's hub reads run before this rule, so their reader refuses to send a token over plain http
    itself (_model_hub.urllib_reader); this rule turns the same refusal into an error that stops the run
    before any host changes, which also covers the model layer's downloads (they send the token alike).
    """
    names, with_token = _hub_models(models)
    problem = token_transport_problem(endpoint) if names else None
    if problem is None or (problem != "is not an http(s) URL" and (lab or not with_token)):
        return []
    shown = f"model_hf_endpoint {str(endpoint)!r} {problem}"
    if problem == "is not an http(s) URL":
        return [finding(
            "model-hf-endpoint", host, None, "model_hf_endpoint", f"{shown} (volta_models {', '.join(names)} "
            "come from the hub).",
            "every hub read (preflight's and the model layer's downloads) starts from this address.",
            "set model_hf_endpoint to https://huggingface.co (the default) or to your mirror's https URL.",
        )]
    return [finding(
        "model-hf-endpoint", host, None, "model_hf_endpoint",
        f"{shown}, and volta_models {', '.join(with_token)} send a token (hf.token) to it.",
        "the token goes in an Authorization header with every hub read (preflight, on the controller and the "
        "hosts, and the model layer's downloads); over plain http anyone on the network path reads it.",
        "use the https address of the hub or mirror (https://huggingface.co is the default), or a mirror on the "
        "host itself (http://127.0.0.1:PORT); or drop hf.token where the repository is public.",
    )]


def _missing(inst, ctx):
    path = inst["model"]
    return finding(
        "model-missing",
        ctx["host"],
        inst["name"],
        "model",
        f"model {path} does not exist on the host.",
        "the engine loads the model from this path when it starts; without it the service fails its "
        "health check after every other step has run.",
        f"copy the checkpoint to {path} on {ctx['host']} (a directory with config.json and the weights, or "
        "the .gguf file for llama.cpp), correct model, or give the instance a model_source from volta_models "
        "(the model layer downloads it at a pinned revision).",
    )


def _hub_unread(inst, ctx, facts):
    return finding(
        "model-hub-unread",
        ctx["host"],
        inst["name"],
        "model_source",
        f"the hub's metadata for {inst['model']} could not be read before download: {facts['hub_error']}.",
        "preflight checks a hub model's config.json and size against the instance before downloading it; "
        "without them the model checks wait until the model layer has downloaded it (the next run checks "
        "the files on the host).",
        "check the model's repo, revision and token and the host's access to model_hf_endpoint; the model "
        "layer reports the same error when it downloads.",
    )


def _check_shape(inst, ctx, facts):
    """A vLLM engine needs a directory with a config.json; llama.cpp a .gguf file."""
    host, name, path = ctx["host"], inst["name"], inst["model"]
    if inst["engine"] == "llamacpp":
        if facts.get("kind") == "file" and facts.get("gguf_architecture"):
            return []
        what = facts.get("gguf_error") or ("a directory" if facts.get("kind") == "directory" else "not a GGUF file")
        return [
            finding(
                "llamacpp-needs-gguf",
                host,
                name,
                "model",
                f"model {path} is not a readable GGUF file ({what}).",
                "llama-server loads one GGUF file (-m FILE); it fails at start on anything else.",
                "point model at the .gguf file (the first part of a split GGUF), or use engine vllm/onecat.",
            )
        ]
    if facts.get("kind") == "directory" and facts.get("config") is not None:
        return []
    what = facts.get("config_error") or "not a directory"
    return [
        finding(
            "model-config",
            host,
            name,
            "model",
            f"model {path} has no readable config.json ({what}).",
            f"{inst['engine']} reads the model's config.json before anything else and refuses to start without it.",
            "add '*.json' to the model source's allow_patterns (or point it at a repository with config.json)."
            if facts.get("read_from") == "hub" else
            f"copy the whole checkpoint directory (config.json, tokenizer files, weights) to {path}.",
        )
    ]


def _check_heads(inst, ctx, facts):
    tp = inst.get("tensor_parallel")
    text = text_config(facts["config"])
    heads, kv = _count(text.get("num_attention_heads")), _count(text.get("num_key_value_heads"))
    if tp is None or heads is None:
        return []
    host, name, path = ctx["host"], inst["name"], inst["model"]
    limit = ctx.get("gpu_count") or len(inst.get("gpus") or []) or tp
    works = ", ".join(str(t) for t in tp_choices(heads, None if "mla" in (_features(facts) or ()) else kv, limit))
    fix = f"use a tensor_parallel that works for this model ({works}) and pipeline_parallel for the other GPUs."
    if heads % tp:
        return [
            finding(
                "heads-tp",
                host,
                name,
                "tensor_parallel",
                f"tensor_parallel {tp} does not divide the {heads} attention heads of {path} (num_attention_heads).",
                "vLLM refuses to start (ModelConfig.verify_with_parallel_config): 'Total number of attention "
                f"heads ({heads}) must be divisible by tensor parallel size ({tp}).'",
                fix,
            )
        ]
    if kv is None or "mla" in (_features(facts) or ()) or kv % tp == 0 or tp % kv == 0:
        return []
    big, small = (tp, kv) if tp >= kv else (kv, tp)
    return [
        finding(
            "kv-heads-tp",
            host,
            name,
            "tensor_parallel",
            f"tensor_parallel {tp} and the {kv} KV heads of {path} (num_key_value_heads): neither divides the other.",
            "vLLM splits the KV heads over the TP ranks, or copies them when TP is larger, and fails while "
            f"building the attention layers (QKVParallelLinear: '{big} is not divisible by {small}').",
            fix,
        )
    ]


def _check_max_len(inst, ctx, facts):
    mml = inst.get("max_model_len")
    if mml is None:
        return []
    derived, key, model_max = derived_max_len(facts["config"], facts.get("tokenizer_max_length"))
    if derived is None or mml <= derived or (model_max is not None and mml <= model_max):
        return []
    longest = int(derived)
    return [
        finding(
            "max-model-len-model",
            ctx["host"],
            inst["name"],
            "max_model_len",
            f"max_model_len {mml} is above the {longest} tokens {inst['model']} allows ({key} in its config.json"
            f"{', with its RoPE scaling' if _rope_entries(text_config(facts['config'])) else ''}).",
            f"vLLM refuses to start: '{vllm_max_len_message(mml, derived, key, model_max)}'",
            f"set max_model_len to {longest} or less, or use a checkpoint whose config.json declares RoPE scaling "
            "(rope_scaling) for a longer context.",
        )
    ]


def _config_dtype(config):
    text = text_config(config)
    return str(config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or text.get("dtype") or "")


def _check_bf16(inst, ctx, facts):
    dtype = inst.get("dtype") or "auto"
    if _config_dtype(facts["config"]) != "bfloat16" or dtype in BF16_DTYPES:
        return []
    if not below(ctx["cc"], FLASH_ATTENTION_MIN):
        return []
    return [
        finding(
            "bf16-checkpoint-half",
            ctx["host"],
            inst["name"],
            "dtype",
            f"{inst['model']} is a bfloat16 checkpoint (torch_dtype in config.json), served as float16 "
            f"(dtype {dtype}) on compute capability {ctx['cc_text']}.",
            "V100 has no bfloat16, so vLLM casts the weights ('Casting torch.bfloat16 to torch.float16.'); "
            "float16 tops out at 65504, and some bf16-trained models overflow to inf/NaN or give garbage.",
            "check the first answers after the start; if they are broken, serve an fp16 or quantized checkpoint "
            "of the model (1Cat-vLLM dequantizes to fp16), or llama.cpp with a GGUF.",
        )
    ]


def _check_checkpoint_quant(inst, ctx, facts):
    name, method = checkpoint_quantization(facts["config"])
    declared = inst.get("quantization")
    if inst["engine"] != "vllm" or not below(ctx["cc"], SM70_BELOW) or name not in VLLM_QUANT_MIN_CAPABILITY:
        return []
    if declared in ONECAT_ONLY_QUANTIZATIONS or inst.get("model_family") == "moe-nvfp4":
        return []  # the quantization rule of the inventory fields already reports it
    need = VLLM_QUANT_MIN_CAPABILITY[name]
    return [
        finding(
            "quantization-needs-onecat",
            ctx["host"],
            inst["name"],
            "model",
            f"{inst['model']} holds {name} weights (quantization_config.quant_method {method}), on upstream "
            f"vLLM on compute capability {ctx['cc_text']}.",
            f"vLLM 0.21.0 needs compute capability {need} for it and refuses to start: 'The quantization method "
            f"{method} is not supported for the current GPU. Minimum capability: {need.replace('.', '')}. Current "
            f"capability: {ctx['cc_text'].replace('.', '')}.'",
            "use engine: onecat (1Cat-vLLM dequantizes AWQ/GPTQ/FP8/NVFP4/MXFP4 to FP16 on SM70), or "
            "llama.cpp with a GGUF, or an FP16 checkpoint.",
        )
    ]


def _check_mla(inst, ctx, facts):
    if "mla" not in (_features(facts) or ()) or inst.get("model_family") == "deepseek-mla":
        return []  # with model_family deepseek-mla the inventory rule mla-needs-llamacpp reports it
    if not below(ctx["cc"], SM70_BELOW):
        return []
    archs = ", ".join(str(a) for a in facts["config"].get("architectures") or []) or "kv_lora_rank"
    return [
        finding(
            "mla-needs-llamacpp",
            ctx["host"],
            inst["name"],
            "engine",
            f"{inst['model']} is a DeepSeek MLA model ({archs}) on {inst['engine']} on compute capability "
            f"{ctx['cc_text']}.",
            "vLLM's MLA attention kernels need Hopper; they do not run on V100.",
            "use engine: llamacpp with a GGUF of the model.",
        )
    ]


def _check_declared(inst, ctx, facts):
    """A declared quantization or model_family the checkpoint contradicts."""
    out = []
    host, name, path = ctx["host"], inst["name"], inst["model"]
    declared = inst.get("quantization")
    given = inst.get("quantization_given")
    if given and isinstance(facts.get("config"), dict) and declared not in (None, "gguf"):
        found, method = checkpoint_quantization(facts["config"])
        if found != declared:
            said = f"quant_method {method}" if method else "no quantization_config"
            out.append(
                finding(
                    "quantization-mismatch",
                    host,
                    name,
                    "quantization",
                    f"quantization {declared}, but the config.json of {path} says {said} ({found}).",
                    "the quantization field selects the engine rules; the engine itself goes by the checkpoint.",
                    f"set quantization: {found}"
                    + (" (or leave it out)" if found == "none" else "")
                    + ", or point model at the checkpoint you meant.",
                )
            )
    family = inst.get("model_family")
    why = family_contradiction(family, facts) if inst.get("model_family_given") and family else None
    if why:
        inferred = infer_family(facts)
        out.append(
            finding(
                "model-family-mismatch",
                host,
                name,
                "model_family",
                f"model_family {family}, but {why} ({_describe(facts)}: {inferred}).",
                "model_family selects the engine rules (MLA, MoE kernels, pipeline and KV-cache limits); "
                "with the wrong family the checks pass for a model that is not the one served.",
                f"set model_family: {inferred}, or leave it out (it is then read from the checkpoint).",
            )
        )
    return out


def _describe(facts):
    if isinstance(facts.get("config"), dict):
        archs = facts["config"].get("architectures") or []
        return "architectures " + ", ".join(str(a) for a in archs) if archs else "config.json"
    return f"GGUF architecture {facts.get('gguf_architecture')}"


def _fit_numbers(inst, server, facts, gpu_facts=None):
    """``(per_gpu_gib, budget_gib, detail)`` or None when the rule cannot be judged."""
    size, gpus = facts.get("weights_bytes"), inst.get("gpus") or []
    if not _number(size) or not gpus:
        return None
    offloaded = OFFLOADED_GB.get(inst.get("model_family"), 0) * GB
    memory, memory_from = gpu_memory(server, gpu_facts, gpus)
    gmu = inst.get("gpu_memory_utilization") if inst["engine"] in VLLM_ENGINES else None
    if inst["engine"] in VLLM_ENGINES and not (_number(gmu) and 0 < gmu <= 1):
        return None  # the gpu_memory_utilization rule reports it
    per_gpu = max(size - offloaded, 0) / len(gpus) / GIB
    budget = memory * (gmu if gmu is not None else 1.0)
    share = f"{_gib(memory)} GiB x gpu_memory_utilization {gmu:.2f}" if gmu is not None else f"all {_gib(memory)} GiB"
    detail = f"{size / GIB:.1f} GiB of weights ({facts.get('weights_from')})"
    if offloaded:
        detail += f", less {offloaded / GIB:.1f} GiB kept in host RAM for model_family {inst['model_family']}"
    return per_gpu, budget, (f"{detail}, over {len(gpus)} GPU(s) of {_gib(memory)} GiB ({memory_from}); "
                             f"the engine may use {share} = {budget:.1f} GiB")


def _check_fit(inst, ctx, server, facts, gpu_facts=None):
    numbers = _fit_numbers(inst, server, facts, gpu_facts)
    if numbers is None or numbers[0] <= numbers[1]:
        return []
    per_gpu, budget, detail = numbers
    need = math.ceil(per_gpu * len(inst["gpus"]) / budget)
    return [
        finding(
            "weights-fit",
            ctx["host"],
            inst["name"],
            "gpus",
            f"{per_gpu:.1f} GiB of weights per GPU for {inst['model']}, above the {budget:.1f} GiB each GPU "
            f"gives the engine ({detail}).",
            "the weights alone do not fit; the engine fails while loading them with CUDA out of memory, and the "
            "KV cache needs room on top.",
            f"spread the model over more GPUs (at least {need}, with tensor_parallel x pipeline_parallel to match), "
            "or use a smaller or quantized checkpoint.",
        )
    ]
