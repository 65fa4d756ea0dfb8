"""Rendered `vllm serve` command lines against the REAL vLLM 0.21.0 parser and config classes.

1. Every vLLM/1Cat-vLLM argv the serving plan renders for ``inventories/lab`` and
   ``inventories/sim`` (disabled instances too: they are one ``enabled: true`` away from running)
   is parsed by the real parser and goes through the real ``SchedulerConfig`` and ``CacheConfig``
   (``vllm_argv_probe.py`` in the cached venv of ``vllm_venv.py``): zero rejections.
2. A table of instances: the preflight rules' verdict equals real vLLM's, and a refusal quotes
   real vLLM's own message.
3. The same table against the lab stand-in's validation (``vllm/_volta_lab/cli.py``, with the
   lab's argv checker): the stand-in agrees with the real release, values included.

All argvs go to one subprocess (JSON on stdin); its time is printed (``-s``).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import time
from pathlib import Path

import pytest
import vllm_venv
import yaml
from ansible_collections.volta.serving.plugins.module_utils._model import DEFAULT_ROOT, resolve_instances
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report, default_settings
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import VLLM_ENGINES

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYPI = ROOT / "tests" / "lab" / "pypi"
VLLM_VERSION = "0.21.0"
MODEL_LEN = 4096  # the model's own context length where an argv has no --max-model-len (the stand-in's)
SCHEDULER_RULES = ("chunked-prefill-mbt", "mbt-below-seqs", "partial-prefill")


def _load(path):
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!vault", lambda loader, node: None)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader) or {}  # noqa: S506  SafeLoader + !vault


def _group_vars(inventory):
    merged = {}
    for path in sorted((inventory / "group_vars").rglob("*.yml")):
        merged.update(_load(path))
    return merged


def inventory_argvs():
    """(inventory/host/instance, serve argv after ``serve``) for every vLLM-engine instance planned."""
    out = []
    for name in ("lab", "sim"):
        inventory = ROOT / "inventories" / name
        group = _group_vars(inventory)
        for host_file in sorted((inventory / "host_vars").glob("*.yml")):
            hostvars = {**group, **_load(host_file)}
            # model_source -> the served path, as the serving plan action does (sim: the lab hub's models).
            instances = resolve_instances(hostvars.get("volta_instances", []), hostvars.get("volta_models", {}),
                                          hostvars.get("volta_models_root", DEFAULT_ROOT))
            report = build_report(PlanInputs(
                host_file.stem,
                hostvars["volta_server"],
                instances,
                profiles=hostvars.get("preflight_engine_profiles"),
                engines_root=hostvars.get("volta_engines_root", default_settings()["engines_root"]),
                generate_keys=True,
            ))
            assert report["errors"] == 0, [f["message"] for f in report["findings"]]
            for entry in report["plan"]["instances"]:
                if entry["engine"] in VLLM_ENGINES:
                    assert entry["argv"][1] == "serve"
                    out.append((f"{name}/{host_file.stem}/{entry['name']}", entry["argv"][2:]))
    return out


SXM2 = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 10, "compute_capability": "7.0",
        "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]], "ram_gb": 512}  # fmt: skip
PCIE = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
        "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
COMMAND_R = {"name": "command-r", "engine": "vllm", "model": "/srv/models/command-r-32b", "gpus": [0, 1, 2, 3],
             "max_model_len": 32768, "max_num_seqs": 16, "port": 8001}  # fmt: skip
FLASH_NEXT = {"name": "flash-next", "engine": "onecat", "model": "/srv/models/Qwen3.8-Flash-Next-NVFP4",
              "model_family": "moe-nvfp4", "quantization": "nvfp4", "gpus": [0, 1, 2, 3], "kv_cache_dtype": "fp8",
              "max_model_len": 1048576, "max_num_seqs": 4, "port": 8001}  # fmt: skip


def _with(base, drop=(), **changes):
    out = {k: v for k, v in copy.deepcopy(base).items() if k not in drop}
    out.update(changes)
    return out


# (case id, instance, the model's own context length for vLLM). The rule's verdict is computed,
# not written here: the test asserts it equals real vLLM's.
TABLE = [
    ("vllm-profile-mbt-unset", COMMAND_R, MODEL_LEN),
    ("vllm-profile-mbt-4096-below-32768", _with(COMMAND_R, max_num_batched_tokens=4096), MODEL_LEN),
    ("vllm-profile-mbt-equals-len", _with(COMMAND_R, max_num_batched_tokens=32768), MODEL_LEN),
    ("vllm-chunked-on-mbt-4096", _with(COMMAND_R, max_num_batched_tokens=4096,
                                       extra_args=["--enable-chunked-prefill"]), MODEL_LEN),
    ("vllm-chunked-on-then-off", _with(COMMAND_R, max_num_batched_tokens=4096, extra_args=[
        "--enable_chunked_prefill", "--no-enable-chunked-prefill"]), MODEL_LEN),
    ("vllm-len-unset-mbt-unset", _with(COMMAND_R, drop=("max_model_len",)), 32768),
    ("vllm-len-unset-mbt-4096", _with(COMMAND_R, drop=("max_model_len",), max_num_batched_tokens=4096), 32768),
    ("vllm-short-len-default-2048", _with(COMMAND_R, max_model_len=1024), MODEL_LEN),
    ("vllm-throughput-mode", _with(COMMAND_R, max_model_len=1024, extra_args=[
        "--performance-mode", "throughput"]), MODEL_LEN),
    ("vllm-chunked-on-seqs-above-default", _with(COMMAND_R, max_num_seqs=4096,
                                                 extra_args=["--enable-chunked-prefill"]), MODEL_LEN),
    ("vllm-mbt-below-seqs", _with(COMMAND_R, max_num_batched_tokens=32768, max_num_seqs=40000), MODEL_LEN),
    ("vllm-partial-prefill-chunked-off", _with(COMMAND_R, extra_args=["--max-num-partial-prefills", "2"]),
     MODEL_LEN),
    ("vllm-long-partial-above-partial", _with(COMMAND_R, extra_args=["--max-long-partial-prefills", "2"]),
     MODEL_LEN),
    ("vllm-threshold-above-len", _with(COMMAND_R, extra_args=[
        "--enable-chunked-prefill", "--max-num-partial-prefills", "2", "--long-prefill-token-threshold", "40000"]),
     MODEL_LEN),
    ("vllm-chunked-switch-with-value", _with(COMMAND_R, extra_args=["--enable-chunked-prefill=false"]), MODEL_LEN),
    ("onecat-profile-1m", FLASH_NEXT, MODEL_LEN),
    ("onecat-chunked-off-1m", _with(FLASH_NEXT, extra_args=["--no-enable-chunked-prefill"]), MODEL_LEN),
    ("onecat-seqs-above-mbt", _with(FLASH_NEXT, max_model_len=8192, max_num_seqs=5000), MODEL_LEN),
    ("onecat-chunked-off-mbt-raised", _with(FLASH_NEXT, max_num_batched_tokens=1048576,
                                            extra_args=["--no-enable-chunked-prefill"]), MODEL_LEN),
]  # fmt: skip


def rule_verdict(instance):
    """(refused?, findings' messages, rendered serve argv) from the preflight rules."""
    server = PCIE if instance["engine"] == "onecat" else SXM2
    report = build_report(PlanInputs("lab-host", copy.deepcopy(server), [copy.deepcopy(instance)], generate_keys=True))
    refusals = [
        f["message"]
        for f in report["findings"]
        if f["rule"] in SCHEDULER_RULES or (f["rule"] == "invalid-value" and "chunked-prefill" in f["message"])
    ]
    [entry] = report["plan"]["instances"]
    return bool(refusals), refusals, entry["argv"][2:]


@pytest.fixture(scope="module")
def real():
    """Real vLLM's verdict on every inventory argv and every table argv, from one subprocess."""
    python = vllm_venv.python(VLLM_VERSION)
    cases = [{"argv": argv, "model_len": MODEL_LEN} for _where, argv in inventory_argvs()]
    cases += [{"argv": rule_verdict(inst)[2], "model_len": model_len} for _id, inst, model_len in TABLE]
    source = vllm_venv.CPU_PLATFORM_PRELUDE + (HERE / "vllm_argv_probe.py").read_text(encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), "-c", source], input=json.dumps({"cases": cases}), capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("VOLTA-PROBE-RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    results = json.loads(lines[-1].split(" ", 1)[1])
    print(f"\nreal vLLM {VLLM_VERSION}: {len(cases)} argvs, one subprocess, {elapsed:.1f} s")
    return results


def test_inventory_argvs_are_accepted_by_real_vllm(real):
    argvs = inventory_argvs()
    assert len(argvs) >= 6  # qwen72b, command-r and two flash-next, in both inventories
    results = real[: len(argvs)]
    refused = [(where, res) for (where, _argv), res in zip(argvs, results, strict=True) if res["verdict"] != "accepted"]
    assert refused == []
    for (_where, argv), result in zip(argvs, results, strict=True):
        values = result["values"]
        if "--no-enable-chunked-prefill" in argv:
            assert values["max_num_batched_tokens"] >= values["max_model_len"]
            assert argv[argv.index("--max-num-batched-tokens") + 1] == str(values["max_num_batched_tokens"])


@pytest.mark.parametrize("index", range(len(TABLE)), ids=[case[0] for case in TABLE])
def test_rule_verdict_equals_real_vllm(real, index):
    _id, instance, _model_len = TABLE[index]
    refused, messages, _argv = rule_verdict(instance)
    result = real[len(inventory_argvs()) + index]
    assert refused == (result["verdict"] != "accepted"), (messages, result)
    if refused:
        # vLLM's message, or its parser's complaint, is what the rule quotes.
        quoted = result["message"].split(": error: ")[-1].split("'")[0]
        if "max_model_len" not in instance:  # the rule cannot know the model's length: it says N
            quoted = quoted.split("max_model_len (")[0]
        assert any(quoted in message for message in messages), (quoted, messages)


def test_table_has_both_verdicts(real):
    verdicts = [real[len(inventory_argvs()) + i]["verdict"] for i in range(len(TABLE))]
    assert {"accepted", "config-error", "parse-error"} <= set(verdicts)


def _load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def standin_verdict(argv, model_len):
    """The lab stand-in's verdict: its argv checker, then its recorded SchedulerConfig checks."""
    check_argv = _load_file("volta_lab_check_argv", PYPI / "check_argv.py")
    cli = _load_file("volta_lab_standin_cli", PYPI / "standins" / "vllm" / "vllm" / "_volta_lab" / "cli.py")
    flags = check_argv.load_flags(VLLM_VERSION)
    try:
        args = check_argv.parse(list(argv), flags)
    except check_argv.ArgvError as exc:
        return {"verdict": "parse-error", "message": exc.render().splitlines()[-1], "values": None}
    error = cli.scheduler_error(args, model_len)
    if error:
        return {"verdict": "config-error", "message": error, "values": None}
    max_len, mbt, seqs, chunked = cli._scheduler_values(args, model_len)
    values = {"max_model_len": max_len, "max_num_batched_tokens": mbt, "max_num_seqs": seqs,
              "enable_chunked_prefill": chunked}  # fmt: skip
    return {"verdict": "accepted", "message": "", "values": values}


def test_lab_standin_agrees_with_real_vllm(real):
    cases = [(where, argv, MODEL_LEN) for where, argv in inventory_argvs()]
    cases += [(case_id, rule_verdict(inst)[2], model_len) for case_id, inst, model_len in TABLE]
    disagree = [
        (where, standin, result)
        for (where, argv, model_len), result in zip(cases, real, strict=True)
        if (standin := standin_verdict(argv, model_len)) != result
    ]
    assert disagree == []
