"""Run inside the cached real-vLLM venv (``vllm_venv.python``): vLLM's own ModelConfig on checkpoints.

Reads ``{"cases": [{"model": DIR, "max_model_len": N, "tensor_parallel": TP}, ...]}`` as JSON on stdin;
for each case builds vLLM 0.21.0's ``ModelConfig`` on the checkpoint directory (its config.json; no
tokenizer, no weights) and calls ``verify_with_parallel_config`` with a ``ParallelConfig`` of that
tensor-parallel size: the two checks ``vllm serve`` runs on the model before it loads anything
(``_get_and_verify_max_len`` in ModelConfig's validation, the heads check in the verify call).
Prints one JSON list on the line starting with MARKER: per case ``{"verdict": "accepted"|"refused",
"message", "max_model_len"}``.

The caller prepends ``vllm_venv.CPU_PLATFORM_PRELUDE`` (vLLM must pick a platform at import).
"""

import json
import sys

from vllm.config import ModelConfig, ParallelConfig

MARKER = "VOLTA-PROBE-RESULT "


def verdict(case):
    try:
        config = ModelConfig(
            model=case["model"], tokenizer=case["model"], skip_tokenizer_init=True,
            max_model_len=case["max_model_len"], dtype="half",
        )  # fmt: skip
        config.verify_with_parallel_config(ParallelConfig(tensor_parallel_size=case["tensor_parallel"]))
    except Exception as exc:  # vLLM raises ValueError, and pydantic's ValidationError from validation
        return {"verdict": "refused", "message": str(exc), "max_model_len": None}
    return {"verdict": "accepted", "message": "", "max_model_len": config.max_model_len}


def main():
    cases = json.load(sys.stdin)["cases"]
    sys.stdout.write("\n" + MARKER + json.dumps([verdict(case) for case in cases]) + "\n")


main()
