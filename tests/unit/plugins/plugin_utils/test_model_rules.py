# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_model_rules.py: the model-aware preflight.

Every rule runs through _plan.build_report on the facts _model_facts reads from checkpoints copied
from tests/fixtures/models (config.json and index recorded from the real models; see its README).
vLLM's refusals quoted in the messages are those of the real vLLM 0.21.0 (tests/real/test_model_rules.py
runs vLLM's own config classes on the same checkpoints).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import build_facts
from ansible_collections.volta.serving.plugins.module_utils._model_facts import gather
from ansible_collections.volta.serving.plugins.plugin_utils._model_rules import (
    MODEL_RULES,
    checkpoint_quantization,
    derived_max_len,
    gpu_memory,
    gpu_memory_gib,
    hf_endpoint,
    infer_family,
    tp_choices,
)
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

REPO = Path(__file__).resolve().parents[4]
MODELS = REPO / "tests" / "fixtures" / "models"
PCIE = {
    "gpu_model": "Tesla V100-PCIE-32GB",
    "gpu_count": 8,
    "compute_capability": "7.0",
    "nvlink_islands": [],
    "ram_gb": 251,
}
KEYED = ("chat",)


@pytest.fixture
def models(tmp_path):
    """Copies every fixture checkpoint under tmp_path; returns name -> path."""
    out = {}
    for source in MODELS.iterdir():
        if source.name == "README.md":
            continue
        target = tmp_path / source.name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
        out[source.name] = str(target)
    out["missing"] = str(tmp_path / "not-copied")
    (tmp_path / "no-config").mkdir()
    out["no-config"] = str(tmp_path / "no-config")
    return out


def chat(model, **fields):
    inst = {"name": "chat", "engine": "vllm", "model": model, "gpus": [0, 1, 2, 3], "port": 8001}
    inst.update(fields)
    return inst


def report(instances, server=None, facts=True, gpu_facts=None):
    paths = [inst["model"] for inst in instances]
    return build_report(PlanInputs(
        "lab-host",
        copy.deepcopy(server or PCIE),
        instances,
        keyed_instances=[inst["name"] for inst in instances],
        model_facts=gather(paths) if facts else None,
        gpu_facts=gpu_facts,
    ))


def findings(rep, rule):
    return [f for f in rep["findings"] if f["rule"] == rule]


# (id, fixture, instance fields, rule, severity, field, text in the message)
CASES = [
    ("missing-path", "missing", {}, "model-missing", "error", "model",
     "does not exist on the host. Why: the engine loads the model from this path"),
    ("no-config", "no-config", {}, "model-config", "error", "model",
     "has no readable config.json (config.json is missing)"),
    ("llamacpp-directory", "Qwen2.5-7B-Instruct", {"engine": "llamacpp", "gpus": [0], "quantization": "gguf"},
     "llamacpp-needs-gguf", "error", "model", "is not a readable GGUF file (a directory)"),
    ("tp3-qwen72b", "Qwen2.5-72B-Instruct", {"gpus": [0, 1, 2], "tensor_parallel": 3}, "heads-tp", "error",
     "tensor_parallel",
     "'Total number of attention heads (64) must be divisible by tensor parallel size (3).' Fix: use a "
     "tensor_parallel that works for this model (1, 2, 4, 8)"),
    ("tp7-qwen7b-kv", "Qwen2.5-7B-Instruct", {"gpus": [0, 1, 2, 3, 4, 5, 6], "tensor_parallel": 7}, "kv-heads-tp",
     "error", "tensor_parallel", "neither divides the other. Why: vLLM splits the KV heads over the TP ranks, or "
     "copies them when TP is larger, and fails while building the attention layers (QKVParallelLinear: "
     "'7 is not divisible by 4')"),
    ("qwen72b-65k", "Qwen2.5-72B-Instruct", {"gpus": list(range(8)), "max_model_len": 65536},
     "max-model-len-model", "error", "max_model_len",
     "'User-specified max_model_len (65536) is greater than the derived max_model_len "
     "(max_position_embeddings=32768.0 or model_max_length=None in model's config.json).'"),
    ("command-r-v01-200k", "c4ai-command-r-v01", {"max_model_len": 200000}, "max-model-len-model", "error",
     "max_model_len", "above the 131072 tokens"),
    ("bf16-qwen72b", "Qwen2.5-72B-Instruct", {"gpus": list(range(8))}, "bf16-checkpoint-half", "warning", "dtype",
     "is a bfloat16 checkpoint (torch_dtype in config.json), served as float16 (dtype half) on compute "
     "capability 7.0"),
    ("awq-on-vllm", "Qwen2.5-72B-Instruct-AWQ", {}, "quantization-needs-onecat", "error", "model",
     "holds awq weights (quantization_config.quant_method awq), on upstream vLLM on compute capability 7.0. "
     "Why: vLLM 0.21.0 needs compute capability 7.5 for it and refuses to start: 'The quantization method awq is "
     "not supported for the current GPU. Minimum capability: 75. Current capability: 70.'"),
    ("nvfp4-declared-none", "Qwen3-30B-A3B-NVFP4", {"engine": "onecat", "quantization": "none"},
     "quantization-mismatch", "error", "quantization",
     "quantization none, but the config.json of"),
    ("awq-declared-gptq", "Qwen2.5-72B-Instruct-AWQ", {"engine": "onecat", "quantization": "gptq"},
     "quantization-mismatch", "error", "quantization", "says quant_method awq (awq)"),
    ("dense-declared-moe", "Qwen2.5-72B-Instruct", {"gpus": list(range(8)), "model_family": "moe"},
     "model-family-mismatch", "error", "model_family",
     "model_family moe, but the checkpoint has no moe layers (architectures Qwen2ForCausalLM: dense)"),
    ("mla-declared-dense", "DeepSeek-V2-Lite-Chat", {"model_family": "dense"}, "model-family-mismatch", "error",
     "model_family", "model_family dense, but the checkpoint has mla, moe layers"),
    ("mla-on-vllm-declared-moe", "DeepSeek-V2-Lite-Chat", {"model_family": "moe"}, "mla-needs-llamacpp", "error",
     "engine", "is a DeepSeek MLA model (DeepseekV2ForCausalLM) on vllm"),
    ("qwen72b-one-gpu", "Qwen2.5-72B-Instruct", {"gpus": [0]}, "weights-fit", "error", "gpus",
     "135.4 GiB of weights per GPU for "),
]


@pytest.mark.parametrize(("fixture", "fields", "rule", "severity", "field", "text"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_rule(models, fixture, fields, rule, severity, field, text):
    rep = report([chat(models[fixture], **fields)])
    hits = findings(rep, rule)
    assert hits, [f["message"] for f in rep["findings"]]
    hit = hits[0]
    assert (hit["severity"], hit["field"], hit["instance"]) == (severity, field, "chat")
    assert hit["message"].startswith(f"lab-host: instance chat: field {field}: ")
    assert text in hit["message"]
    assert " Why: " in hit["message"] and " Fix: " in hit["message"]


def test_every_model_rule_has_a_case():
    # model-hf-endpoint is an inventory rule of preflight (test_hf_endpoint_* below), not a checkpoint rule.
    assert set(MODEL_RULES) - {c[3] for c in CASES} - {"model-hub-unread", "model-hf-endpoint"} == set()


HF_TOKEN = "hf_test_token_not_a_secret_0123456789"  # noqa: S105 - a test value, not a token


def hub_models(token=HF_TOKEN):
    hf = {"repo": "Qwen/Qwen3-8B", "revision": "1" * 40, **({"token": token} if token else {})}
    return {"qwen": {"hf": hf}, "local": {"path": "/srv/models/local"}}


@pytest.mark.parametrize(
    "endpoint", ["https://huggingface.co", "https://mirror.example:8443", "http://127.0.0.1:8080", "http://[::1]:9"]
)
def test_hf_endpoint_https_or_loopback_carries_a_token(endpoint):
    assert hf_endpoint("h1", hub_models(), endpoint) == []


def test_hf_endpoint_plain_http_is_fine_without_a_token_and_without_hub_models():
    assert hf_endpoint("h1", hub_models(token=None), "http://mirror.example") == []
    assert hf_endpoint("h1", {"local": {"path": "/srv/m"}}, "not a url") == []
    assert hf_endpoint("h1", ["qwen"], "http://mirror.example") == []  # the shape check names a list


def test_hf_endpoint_plain_http_with_a_token_is_refused_without_showing_it():
    (hit,) = hf_endpoint("h1", hub_models(), "http://mirror.example")
    assert (hit["rule"], hit["severity"], hit["field"]) == ("model-hf-endpoint", "error", "model_hf_endpoint")
    assert hit["message"] == (
        "h1: host-wide: field model_hf_endpoint: model_hf_endpoint 'http://mirror.example' is plain http to a host "
        "other than this machine, and volta_models qwen send a token (hf.token) to it. Why: the token goes in an "
        "Authorization header with every hub read (preflight, on the controller and the hosts, and the model "
        "layer's downloads); over plain http anyone on the network path reads it. Fix: use the https address of "
        "the hub or mirror (https://huggingface.co is the default), or a mirror on the host itself "
        "(http://127.0.0.1:PORT); or drop hf.token where the repository is public."
    )
    assert HF_TOKEN not in hit["message"]


def test_hf_endpoint_plain_http_with_a_token_is_allowed_in_the_lab_only():
    # The lab's stand-in hub (http://volta-lab-hub:8090) and its stand-in token: volta_lab: true.
    assert hf_endpoint("h1", hub_models(), "http://volta-lab-hub:8090", lab=True) == []
    assert len(hf_endpoint("h1", hub_models(), "http://volta-lab-hub:8090")) == 1
    assert len(hf_endpoint("h1", hub_models(), "volta-lab-hub", lab=True)) == 1


def test_hf_endpoint_that_is_no_url_is_refused_when_a_model_comes_from_the_hub():
    (hit,) = hf_endpoint("h1", hub_models(token=None), "mirror.example")
    assert hit["message"].startswith(
        "h1: host-wide: field model_hf_endpoint: model_hf_endpoint 'mirror.example' is not an http(s) URL "
        "(volta_models qwen come from the hub)."
    )


def hub_facts_of(path, **changes):
    """Facts as _model_hub.hub_facts gives them for a model not downloaded yet."""
    facts = gather([path])[path]
    facts.update(read_from="hub", **changes)
    return facts


def test_an_unreadable_hub_model_warns_and_defers_its_checks(tmp_path):
    path = str(tmp_path / "tiny@0123456789abcdef0123456789abcdef01234567")
    facts = {path: hub_facts_of(path, hub_error="org/m@0123456789ab: HTTP 401 GatedRepo (a gated repo)")}
    rep = build_report(PlanInputs("lab-host", copy.deepcopy(PCIE), [chat(path, max_model_len=10**7)],
                                  keyed_instances=KEYED, model_facts=facts))
    hits = findings(rep, "model-hub-unread")
    assert [h["severity"] for h in hits] == ["warning"]
    assert hits[0]["message"].startswith("lab-host: instance chat: field model_source: the hub's metadata for ")
    assert "HTTP 401 GatedRepo" in hits[0]["message"]
    assert not findings(rep, "model-missing"), "a model not downloaded yet is not 'missing on the host'"


def test_a_pending_url_model_is_not_missing(tmp_path):
    path = str(tmp_path / "g@aaaaaaaaaaaa" / "m.gguf")
    facts = {path: dict(gather([path])[path], pending=True)}
    inst = chat(path, engine="llamacpp", gpus=[0], quantization="gguf")
    rep = build_report(PlanInputs("lab-host", copy.deepcopy(PCIE), [inst], keyed_instances=KEYED, model_facts=facts))
    assert not [f for f in rep["findings"] if f["rule"] in ("model-missing", "llamacpp-needs-gguf")]
    facts[path]["pending"] = False
    rep = build_report(PlanInputs("lab-host", copy.deepcopy(PCIE), [inst], keyed_instances=KEYED, model_facts=facts))
    assert findings(rep, "model-missing")


def test_a_hub_read_model_is_checked_like_a_local_one(models, tmp_path):
    local = gather([models["Qwen2.5-72B-Instruct"]])[models["Qwen2.5-72B-Instruct"]]
    path = str(tmp_path / "qwen@0123456789abcdef0123456789abcdef01234567")
    facts = {path: dict(local, path=path, read_from="hub")}
    rep = build_report(PlanInputs("lab-host", copy.deepcopy(PCIE), [chat(path, gpus=[0, 1, 2], tensor_parallel=3)],
                       keyed_instances=KEYED, model_facts=facts))
    assert findings(rep, "heads-tp") and findings(rep, "weights-fit")


def test_a_hub_model_without_config_json_names_allow_patterns(tmp_path):
    path = str(tmp_path / "m@0123456789abcdef0123456789abcdef01234567")
    facts = {path: hub_facts_of(path, exists=True, kind="directory",
                                config_error="config.json is not among the files the source fetches")}
    rep = build_report(PlanInputs("lab-host", copy.deepcopy(PCIE), [chat(path)], keyed_instances=KEYED,
                                  model_facts=facts))
    (hit,) = findings(rep, "model-config")
    assert "Fix: add '*.json' to the model source's allow_patterns" in hit["message"]


def test_oversized_message_names_both_numbers(models):
    message = findings(report([chat(models["Qwen2.5-72B-Instruct"], gpus=[0])]), "weights-fit")[0]["message"]
    assert "above the 28.8 GiB each GPU gives the engine (135.4 GiB of weights (model.safetensors.index.json), " in (
        message
    )
    assert ("over 1 GPU(s) of 32 GiB (gpu_model Tesla V100-PCIE-32GB); the engine may use 32 GiB x "
            "gpu_memory_utilization 0.90 = 28.8 GiB)") in message
    assert "spread the model over more GPUs (at least 5," in message


def test_missing_model_stops_the_other_model_checks(models):
    rep = report([chat(models["missing"], gpus=[0], tensor_parallel=3)])
    assert [f["rule"] for f in rep["findings"] if f["rule"] in MODEL_RULES] == ["model-missing"]


def test_without_facts_no_model_rule_runs(models):
    rep = report([chat(models["missing"])], facts=False)
    assert not [f for f in rep["findings"] if f["rule"] in MODEL_RULES]


def test_hub_ids_are_not_checked():
    rep = report([chat("Qwen/Qwen3-8B", gpus=[0])])
    assert not [f for f in rep["findings"] if f["rule"] in MODEL_RULES]


@pytest.mark.parametrize(
    ("fixture", "fields", "family"),
    [
        ("Qwen3-30B-A3B", {}, "moe"),
        ("Qwen2.5-72B-Instruct", {"gpus": list(range(8))}, "dense"),
        ("Qwen3.8-Flash-Next-NVFP4", {"engine": "onecat", "quantization": "nvfp4"}, "moe-nvfp4"),
        ("DeepSeek-V2-Lite-Chat-Q8_0.gguf", {"engine": "llamacpp", "gpus": [0, 1]}, "deepseek-mla"),
    ],
)
def test_model_family_is_read_from_the_checkpoint(models, fixture, fields, family):
    rep = report([chat(models[fixture], **fields)])
    assert rep["plan"]["instances"][0]["model_family"] == family


def test_inferred_mla_family_brings_the_llamacpp_rule(models):
    rep = report([chat(models["DeepSeek-V2-Lite-Chat"])])
    assert "model_family deepseek-mla on vllm" in findings(rep, "mla-needs-llamacpp")[0]["message"]
    assert not findings(rep, "model-family-mismatch")


def test_declared_family_is_kept(models):
    rep = report([chat(models["Qwen3-30B-A3B"], model_family="moe")])
    assert rep["plan"]["instances"][0]["model_family"] == "moe"
    assert not findings(rep, "model-family-mismatch")


@pytest.mark.parametrize(
    ("fixture", "fields"),
    [
        ("c4ai-command-r-v01", {"max_model_len": 131072}),  # model_max_length replaces the 8192 positions
        ("DeepSeek-V2-Lite-Chat", {"engine": "onecat", "max_model_len": 163840, "model_family": "deepseek-mla"}),
        ("Qwen3-30B-A3B", {"gpus": list(range(8)), "tensor_parallel": 8}),  # 4 KV heads copied to 8 ranks
        ("c4ai-command-r-08-2024", {"max_model_len": 131072, "max_num_batched_tokens": 131072}),
    ],
)
def test_what_vllm_accepts_is_not_refused(models, fixture, fields):
    rep = report([chat(models[fixture], **fields)])
    refused = {"heads-tp", "kv-heads-tp", "max-model-len-model", "weights-fit", "model-family-mismatch"}
    assert not [f["message"] for f in rep["findings"] if f["rule"] in refused]


def test_yarn_scaling_sets_the_longest_length():
    config = {"max_position_embeddings": 163840,
              "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}}
    assert derived_max_len(config) == (163840, "max_position_embeddings", None)
    assert isinstance(derived_max_len(config)[0], int)
    config["rope_scaling"] = {"rope_type": "dynamic", "factor": 2.0}
    assert derived_max_len(config)[0] == 327680.0
    config["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0}
    assert derived_max_len(config)[0] == 163840
    assert derived_max_len({"max_position_embeddings": 32768}, tokenizer_max_length=16384)[0] == 16384
    with_theta = {"max_position_embeddings": 32768, "rope_theta": 1e6}
    assert derived_max_len(with_theta) == (32768.0, "max_position_embeddings", None)
    assert derived_max_len({"hidden_size": 8}) == (None, None, None)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, ("none", None)),
        ({"quantization_config": {"quant_method": "awq"}}, ("awq", "awq")),
        ({"quantization_config": {"quant_method": "gptq"}}, ("gptq", "gptq")),
        ({"quantization_config": {"quant_method": "fp8"}}, ("fp8", "fp8")),
        ({"quantization_config": {"quant_method": "mxfp4"}}, ("mxfp4", "mxfp4")),
        ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4"}}, ("nvfp4", "modelopt")),
        ({"quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"}}, ("fp8", "modelopt")),
        ({"quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}},
         ("nvfp4", "compressed-tensors")),
        ({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized"}},
         ("compressed-tensors", "compressed-tensors")),
    ],
)
def test_checkpoint_quantization(config, expected):
    assert checkpoint_quantization(config) == expected


def test_gptq_checkpoint_is_not_refused_on_upstream_vllm(models):
    # vLLM 0.21.0's `gptq` method takes compute capability 6.0 (exllama kernels); only gptq_marlin needs 7.5.
    path = Path(models["Qwen2.5-7B-Instruct"])
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"] = {"bits": 4, "group_size": 128, "desc_act": False, "quant_method": "gptq"}
    (path / "config.json").write_text(json.dumps(config))
    rep = report([chat(str(path), gpus=[0])])
    assert not findings(rep, "quantization-needs-onecat")
    awq = report([chat(models["Qwen2.5-72B-Instruct-AWQ"], gpus=[0, 1])])
    assert findings(awq, "quantization-needs-onecat")


def test_infer_family_needs_something_read():
    assert infer_family({"config": None, "gguf_architecture": None}) is None
    assert infer_family({"config": None, "gguf_architecture": "qwen3moe"}) == "moe"


def test_tp_choices():
    assert tp_choices(64, 8, 10) == [1, 2, 4, 8]
    assert tp_choices(28, 4, 8) == [1, 2, 4]
    assert tp_choices(32, 4, 8) == [1, 2, 4, 8]


def sim_instances(host, models):
    """inventories/sim/host_vars/<host>.yml's instances, their model sources replaced by fixture copies
    (the checkpoints the lab hub serves; the GGUF of the reference in place of the lab's tiny one)."""
    data = yaml.safe_load((REPO / "inventories" / "sim" / "host_vars" / f"{host}.yml").read_text())
    names = {
        "qwen2.5-72b-instruct": "Qwen2.5-72B-Instruct",
        "command-r-32b": "c4ai-command-r-08-2024",
        "deepseek-v2-lite-gguf": "DeepSeek-V2-Lite-Chat-Q8_0.gguf",
        "qwen3.8-flash-next-nvfp4": "Qwen3.8-Flash-Next-NVFP4",
    }
    for inst in data["volta_instances"]:
        inst["model"] = models[names[inst.pop("model_source")]]
    return data["volta_server"], data["volta_instances"]


@pytest.mark.parametrize("host", ["sxm2", "pcie"])
def test_the_reference_servers_checkpoints_fit_their_settings(models, host):
    server, instances = sim_instances(host, models)
    rep = report(instances, server=server)
    model_findings = [f for f in rep["findings"] if f["rule"] in MODEL_RULES or f["rule"].endswith("needs-llamacpp")]
    assert [f["message"] for f in model_findings if f["severity"] == "error"] == []
    warned = sorted({(f["instance"], f["rule"]) for f in model_findings})
    expected = {
        "sxm2": [("qwen72b", "bf16-checkpoint-half")],
        "pcie": [("flash-next-a", "bf16-checkpoint-half"), ("flash-next-b", "bf16-checkpoint-half")],
    }
    assert warned == expected[host]


# ---------------------------------------------------------------- 16 GB and 32 GB V100s
def server_of(name, count):
    return {"gpu_model": name, "gpu_count": count, "compute_capability": "7.0", "nvlink_islands": [], "ram_gb": 251}


def smi_facts(name, count, mib):
    """The volta_gpu fact of a PCIe-only host, from nvidia-smi output in the format of the real capture
    (tests/fixtures/nvidia-smi): --query-gpu ... --format=csv,noheader,nounits and topo -m."""
    query = "".join(
        f"{i}, 00000000:{0x18 + i:02X}:00.0, {name}, GPU-00000000-0000-0000-0000-{i:012d}, 7.0, {mib}, "
        "580.95.05, Enabled\n" for i in range(count))
    header = "\t\x1b[4m" + "\t".join(f"GPU{i}" for i in range(count)) + "\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
    rows = "".join(f"GPU{i}\t" + "\t".join(" X " if i == j else "SYS" for j in range(count)) + "\t0-31\t0\n"
                   for i in range(count))
    return build_facts(0, query, 0, header + rows + "\nLegend:\n")


@pytest.mark.parametrize(("name", "gib"), [
    ("Tesla V100-PCIE-16GB", 16),
    ("Tesla V100-SXM2-16GB", 16),
    ("Tesla V100-PCIE-32GB", 32),
    ("Tesla V100-SXM2-32GB", 32),
    ("Tesla V100S-PCIE-32GB", 32),
    ("tesla v100-sxm2-16gb", 16),
    ("Tesla V100-SXM2", 32),
    ("", 32),
])
def test_gpu_memory_from_the_model_name(name, gib):
    assert gpu_memory_gib({"gpu_model": name}) == gib


@pytest.mark.parametrize(("name", "mib", "indexes", "expected"), [
    ("Tesla V100-PCIE-16GB", 16160, [0, 1], (16160 / 1024, "nvidia-smi memory.total")),
    ("Tesla V100-SXM2-32GB", 32768, [], (32.0, "nvidia-smi memory.total")),
    ("Tesla V100-SXM2-32GB", 32768, [7], (32.0, "nvidia-smi memory.total")),
])
def test_gpu_memory_from_nvidia_smi_wins(name, mib, indexes, expected):
    assert gpu_memory(server_of("Tesla V100-SXM2", 4), smi_facts(name, 4, mib), indexes) == expected


def test_gpu_memory_without_a_read_uses_the_name():
    assert gpu_memory(server_of("Tesla V100-SXM2-16GB", 4), {"status": "no_driver", "gpus": []}) == (
        16, "gpu_model Tesla V100-SXM2-16GB")
    assert gpu_memory(server_of("Tesla V100-SXM2", 4)) == (32, "no size in gpu_model, assumed")


Q72 = "Qwen2.5-72B-Instruct"
TP4 = {"gpus": [0, 1, 2, 3], "tensor_parallel": 4}
TP4PP2 = {"gpus": list(range(8)), "tensor_parallel": 4, "pipeline_parallel": 2}
# (id, gpu_model, GPUs on the host, nvidia-smi's MiB per GPU or None (offline), instance fields,
#  None when weights-fit passes, else the texts of its message)
FIT_CASES = [
    ("72b-fp16-on-4x-pcie-16gb", "Tesla V100-PCIE-16GB", 4, None, TP4,
     ["33.9 GiB of weights per GPU for ", "above the 14.4 GiB each GPU gives the engine",
      "(135.4 GiB of weights (model.safetensors.index.json), over 4 GPU(s) of 16 GiB (gpu_model Tesla V100-PCIE-16GB); "
      "the engine may use 16 GiB x gpu_memory_utilization 0.90 = 14.4 GiB)", "at least 10,"]),
    ("72b-fp16-on-4x-sxm2-16gb", "Tesla V100-SXM2-16GB", 4, None, TP4,
     ["33.9 GiB of weights per GPU", "over 4 GPU(s) of 16 GiB (gpu_model Tesla V100-SXM2-16GB)"]),
    ("72b-fp16-on-4x-16gb-read", "Tesla V100-PCIE-16GB", 4, 16160, TP4,
     ["above the 14.2 GiB each GPU gives the engine",
      "over 4 GPU(s) of 15.8 GiB (nvidia-smi memory.total); the engine may use 15.8 GiB x "]),
    ("72b-fp16-on-8x-16gb", "Tesla V100-PCIE-16GB", 8, None, TP4PP2,
     ["16.9 GiB of weights per GPU", "above the 14.4 GiB each GPU gives the engine"]),
    ("72b-fp16-on-8x-pcie-32gb", "Tesla V100-PCIE-32GB", 8, None, TP4PP2, None),
    ("72b-fp16-on-8x-sxm2-32gb", "Tesla V100-SXM2-32GB", 8, None, TP4PP2, None),
    ("72b-fp16-on-8x-32gb-read", "Tesla V100-SXM2-32GB", 8, 32768, TP4PP2, None),
    ("72b-fp16-on-4x-32gb", "Tesla V100-SXM2-32GB", 4, None, TP4, ["33.9 GiB of weights per GPU", "28.8 GiB"]),
    ("7b-on-2x-sxm2-16gb", "Tesla V100-SXM2-16GB", 2, None, {"gpus": [0, 1], "tensor_parallel": 2}, None),
]


@pytest.mark.parametrize(("gpu_model", "count", "mib", "fields", "texts"), [c[1:] for c in FIT_CASES],
                         ids=[c[0] for c in FIT_CASES])
def test_weights_fit_on_16_and_32_gb_cards(models, gpu_model, count, mib, fields, texts):
    model = models["Qwen2.5-7B-Instruct" if fields["gpus"] == [0, 1] else Q72]
    gpu_facts = smi_facts(gpu_model, count, mib) if mib else None
    rep = report([chat(model, **fields)], server=server_of(gpu_model, count), gpu_facts=gpu_facts)
    hits = findings(rep, "weights-fit")
    if texts is None:
        assert hits == []
        assert rep["errors"] == 0, [f["message"] for f in rep["findings"]]
        return
    (hit,) = hits
    assert (hit["severity"], hit["field"]) == ("error", "gpus")
    for text in texts:
        assert text in hit["message"]
    assert [f["rule"] for f in rep["findings"] if f["severity"] == "error"] == ["weights-fit"]
