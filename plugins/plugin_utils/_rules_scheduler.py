# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scheduler rules of a vLLM instance: what vLLM 0.21.0's SchedulerConfig refuses at start (chunked
prefill, max_num_batched_tokens against max_model_len and max_num_seqs, partial prefills), before any change.

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE and the per-instance checks.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    VLLM_ENGINES,
    chunked_prefill,
    int_flag,
    throughput_mode,
    vllm_default_mbt,
    vllm_mbt_below_len_message,
    vllm_mbt_below_seqs_message,
)

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "chunked-prefill-mbt": (ERROR, False, "chunked prefill off with max_num_batched_tokens below max_model_len"),
    "mbt-below-seqs": (ERROR, False, "max_num_batched_tokens below max_num_seqs"),
    "partial-prefill": (ERROR, False, "partial-prefill settings vLLM's SchedulerConfig refuses"),
}


def _scheduler_args(inst):
    return list(inst.get("profile_flags") or []) + list(inst["extra_args"] or [])


def check_scheduler(inst, ctx):
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
