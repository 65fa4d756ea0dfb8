"""The recorded ``vllm serve`` flag list and the flag resolver against the REAL vLLM 0.21.0 parser.

``plugins/plugin_utils/_vllm_flags.py`` records the option strings of vLLM 0.21.0's serve parser;
``_vllm_cli`` resolves extra_args against it (``_`` -> ``-``, unique prefixes). Here the real
parser (``vllm_flags_probe.py`` in the cached venv of ``vllm_venv.py``) gives its own list, its
``allow_abbrev``, and how it reads a table of spellings: the list must be equal, and for every
spelling the resolver must name the arguments the real parser sets, or refuse what it refuses.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import vllm_venv
from ansible_collections.volta.serving.plugins.plugin_utils import _vllm_cli, _vllm_flags

HERE = Path(__file__).resolve().parent
MARKER = "VOLTA-FLAGS-RESULT "
ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - the bind an abbreviation would sneak in
# Words after ``vllm serve m``: the review's bypasses, abbreviations, ambiguous prefixes, typos.
CASES = [
    ["--api_key", "sk-1"],
    ["--api-ke", "sk-1"],
    ["--hos", ALL_INTERFACES],
    [f"--ho={ALL_INTERFACES}"],
    ["--served_model_name", "x"],
    ["--max_model_l", "4096"],
    ["--attention_backend", "TRITON_ATTN"],
    ["--no_enable_chunked_prefill"],
    ["--enforce-eager"],
    ["--enforce-eagerly"],
    ["--en"],
    ["--max-num", "8"],
    ["-t", "2"],
    ["-tp", "2"],
    ["-d", "2"],
    ["--gpu-memory-util", "0.5"],
]


@pytest.fixture(scope="module")
def real():
    python = vllm_venv.python(_vllm_flags.RECORDED_VERSION)
    source = vllm_venv.CPU_PLATFORM_PRELUDE + (HERE / "vllm_flags_probe.py").read_text(encoding="utf-8")
    done = subprocess.run(
        [str(python), "-c", source], input=json.dumps({"cases": CASES}), capture_output=True, text=True,
        timeout=600, check=False, cwd="/",
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    assert lines, f"the probe printed no result (rc {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(lines[-1][len(MARKER):])


def test_recorded_flag_list_is_the_real_parsers(real):
    recorded = set(_vllm_flags.SERVE_FLAGS)
    assert len(_vllm_flags.SERVE_FLAGS) == len(recorded)
    assert sorted(recorded) == real["flags"], (
        f"missing from the record: {sorted(set(real['flags']) - recorded)}; "
        f"not in the real parser: {sorted(recorded - set(real['flags']))}"
    )


def test_real_parser_accepts_abbreviations(real):
    assert real["allow_abbrev"] is _vllm_flags.RECORDED_ALLOW_ABBREV is True


@pytest.mark.parametrize("index", range(len(CASES)), ids=[" ".join(c) for c in CASES])
def test_resolver_reads_each_spelling_like_the_real_parser(real, index):
    words = CASES[index]
    tokens, problems = _vllm_cli.resolve_args(words)
    if problems:
        assert real["cases"][index] == "parse-error"
        return
    dests = sorted({real["dests"][_vllm_cli.resolve_flag(w)[1]] for w in tokens if _vllm_cli.resolve_flag(w)[1]})
    assert real["cases"][index] == dests
