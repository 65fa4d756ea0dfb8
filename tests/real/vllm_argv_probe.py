"""Run inside the cached real-vLLM venv (``vllm_venv.python``): real parser + real config classes.

Reads ``{"cases": [{"argv": [...], "model_len": N}, ...]}`` as JSON on stdin; ``argv`` is what
follows ``vllm serve``; ``model_len`` stands for the model's own context length (what vLLM reads
from the checkpoint's config.json when ``--max-model-len`` is not given). Prints one JSON list, on
the line starting with MARKER: per case ``{"verdict": "accepted"|"parse-error"|"config-error", "message", "values"}``.

What runs is vLLM's own code, called the way ``vllm serve`` reaches it (vLLM 0.21.0:
``entrypoints/openai/api_server.py`` -> ``AsyncEngineArgs.from_cli_args`` ->
``EngineArgs.create_engine_config``), minus what needs a model or a GPU:

- the top ``vllm`` parser with the ``serve`` subcommand, as ``vllm.entrypoints.cli.main`` builds it;
- ``EngineArgs._set_default_chunked_prefill_and_prefix_caching_args`` with a model stub of a
  decoder-only generate model (chunked prefill and prefix caching supported);
- ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` for the ``vllm serve`` usage
  context, with the platform answering like a V100 (CUDA, 32 GB, not an A100, not CPU/TPU), so
  that vLLM's CUDA defaults apply, not its CPU ones;
- ``SchedulerConfig(...)`` with the arguments ``create_engine_config`` passes, and
  ``CacheConfig(gpu_memory_utilization, cache_dtype)``.

The caller prepends ``vllm_venv.CPU_PLATFORM_PRELUDE`` (vLLM must pick a platform at import).
"""

import contextlib
import io
import json
import sys
import types

from vllm.config import CacheConfig, SchedulerConfig
from vllm.engine import arg_utils
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.usage.usage_lib import UsageContext
from vllm.utils.argparse_utils import FlexibleArgumentParser

MARKER = "VOLTA-PROBE-RESULT "
V100 = types.SimpleNamespace(
    is_cpu=lambda: False,
    is_tpu=lambda: False,
    get_device_total_memory=lambda: 32 * 1024**3,
    get_device_name=lambda: "Tesla V100-SXM2-32GB",
)


def _parser():
    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    ServeSubcommand().subparser_init(subparsers)
    return top


def _parse(top, argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return top.parse_args(["serve", *argv]), None
        except SystemExit:
            lines = [line for line in err.getvalue().splitlines() if ": error: " in line]
            return None, lines[-1] if lines else err.getvalue().strip()


def _configure(ns, model_len):
    args = AsyncEngineArgs.from_cli_args(ns)
    max_model_len = args.max_model_len if args.max_model_len not in (None, -1) else model_len
    model = types.SimpleNamespace(
        max_model_len=max_model_len,
        runner_type="generate",
        is_chunked_prefill_supported=True,
        is_prefix_caching_supported=True,
        is_multimodal_model=False,
        is_encoder_decoder=False,
    )
    args._set_default_chunked_prefill_and_prefix_caching_args(model)
    real_platform = arg_utils.current_platform
    arg_utils.current_platform = V100
    try:
        args._set_default_max_num_seqs_and_batched_tokens_args(
            UsageContext.OPENAI_API_SERVER, model, types.SimpleNamespace(use_batched_dp_moe=False)
        )
    finally:
        arg_utils.current_platform = real_platform
    values = {
        "max_model_len": max_model_len,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "max_num_seqs": args.max_num_seqs,
        "enable_chunked_prefill": args.enable_chunked_prefill,
    }
    SchedulerConfig(
        runner_type="generate",
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        max_model_len=max_model_len,
        enable_chunked_prefill=args.enable_chunked_prefill,
        disable_chunked_mm_input=args.disable_chunked_mm_input,
        is_multimodal_model=False,
        is_encoder_decoder=False,
        policy=args.scheduling_policy,
        scheduler_cls=args.scheduler_cls,
        max_num_partial_prefills=args.max_num_partial_prefills,
        max_long_partial_prefills=args.max_long_partial_prefills,
        long_prefill_token_threshold=args.long_prefill_token_threshold,
        scheduler_reserve_full_isl=args.scheduler_reserve_full_isl,
        disable_hybrid_kv_cache_manager=args.disable_hybrid_kv_cache_manager,
        async_scheduling=args.async_scheduling,
        stream_interval=args.stream_interval,
    )
    CacheConfig(gpu_memory_utilization=args.gpu_memory_utilization, cache_dtype=args.kv_cache_dtype)
    return values


def _error_text(exc):
    # pydantic wraps a ValueError raised in __post_init__: keep vLLM's own sentence.
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            return str(first.get("ctx", {}).get("error") or first.get("msg"))
    return str(exc)


def main():
    cases = json.load(sys.stdin)["cases"]
    top = _parser()
    out = []
    for case in cases:
        ns, parse_error = _parse(top, case["argv"])
        if ns is None:
            out.append({"verdict": "parse-error", "message": parse_error, "values": None})
            continue
        try:
            values = _configure(ns, case.get("model_len", 4096))
        except Exception as exc:  # every config error is a verdict
            out.append({"verdict": "config-error", "message": _error_text(exc), "values": None})
            continue
        out.append({"verdict": "accepted", "message": "", "values": values})
    # vLLM logs to stdout too: the result is the one line after the marker.
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")


main()
