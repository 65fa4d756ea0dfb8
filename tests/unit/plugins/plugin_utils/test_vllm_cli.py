# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""extra_args flags resolved like the pinned vLLM parser (plugins/plugin_utils/_vllm_cli.py).

The bypasses of the security review: ``--api_key sk...``, ``--api-ke sk...``, ``--hos 0.0.0.0``,
``--served_model_name x`` passed preflight and reached the argv. vLLM 0.21.0's parser reads them
as --api-key, --host and --served-model-name (tests/real/test_vllm_flags.py shows it on the real
parser); preflight now does too.
"""

from __future__ import annotations

import copy

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _vllm_cli
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

from .plan_inputs import INSTANCE, SERVER

ALL_INTERFACES = "0.0.0.0"  # noqa: S104 - the bind the checks must refuse


def report(extra_args, engine="vllm"):
    inst = copy.deepcopy(INSTANCE)
    inst.update(extra_args=extra_args, engine=engine)
    return build_report(PlanInputs("lab-host", copy.deepcopy(SERVER), [inst], generate_keys=True))


def rules(rep):
    return {(f["rule"], f["severity"]) for f in rep["findings"]}


@pytest.mark.parametrize(
    ("arg", "token", "canonical"),
    [
        ("--api_key", "--api-key", "--api-key"),
        ("--api-ke", "--api-key", "--api-key"),
        ("--hos", "--host", "--host"),
        ("--hos=0.0.0.0", "--host=0.0.0.0", "--host"),
        ("--served_model_name", "--served-model-name", "--served-model-name"),
        ("--attention_backend", "--attention-backend", "--attention-backend"),
        ("--max-model-len", "--max-model-len", "--max-model-len"),
        ("--no_enable_chunked_prefill", "--no-enable-chunked-prefill", "--no-enable-chunked-prefill"),
        ("--compilation_config.cudagraph_mode=NONE", "--compilation-config.cudagraph_mode=NONE",
         "--compilation-config"),
        ("-tp", "-tp", "-tp"),
        ("-t", "-tp", "-tp"),
        ("-q4", "-q4", "-q"),
        ("-O3", "-O3", "--optimization-level"),
        ("model-value", "model-value", None),
        ("-1", "-1", None),
    ],
)
def test_flags_resolve_like_the_vllm_parser(arg, token, canonical):
    assert _vllm_cli.resolve_flag(arg)[:2] == (token, canonical)


@pytest.mark.parametrize(("arg", "options"), [("--max-num", 3), ("--en", 10), ("-d", 3)])
def test_ambiguous_prefixes_are_problems(arg, options):
    _token, canonical, problem = _vllm_cli.resolve_flag(arg)
    assert canonical is None
    assert problem[0] == "ambiguous"
    assert len(problem[1]) >= options


def test_words_after_double_dash_are_values():
    tokens, problems = _vllm_cli.resolve_args(["--hos", "x", "--", "--nonsense"])
    assert tokens == ["--host", "x", "--", "--nonsense"]
    assert problems == []


@pytest.mark.parametrize(
    ("extra", "rule", "text"),
    [
        (["--api_key", "sk-123456789012345678"], "secret-in-plan", "extra_args passes an API key"),
        (["--api-ke", "sk-123456789012345678"], "secret-in-plan", "extra_args passes an API key"),
        (["--hos", ALL_INTERFACES], "bind-non-loopback", f"--host {ALL_INTERFACES} binds the engine"),
        ([f"--ho={ALL_INTERFACES}"], "bind-non-loopback", f"--host {ALL_INTERFACES} binds the engine"),
        (["--served_model_name", "x"], "managed-flag", "--served-model-name is set by volta.serving"),
        (["--max_model_len", "4096"], "managed-flag", "--max-model-len is set by volta.serving"),
        (["--attention_backend", "FLASH_ATTN"], "flash-attention-on-sm70", "FLASH_ATTN"),
        (["--max-num", "8"], "unknown-flag", "--max-num is an ambiguous abbreviation of --max-num-batched-tokens"),
        (["--enforce-eagerly"], "unknown-flag", "is not an option of vllm serve 0.21.0"),
        (["--config", "/srv/more.yaml"], "config-file-flag", "--config reads more options from a YAML file."),
        (["--config=/srv/more.yaml"], "config-file-flag", "--config reads more options from a YAML file."),
    ],
)
def test_bypasses_are_refused_in_preflight(extra, rule, text):
    rep = report(extra)
    hits = [f for f in rep["findings"] if f["rule"] == rule]
    assert hits, [f["message"] for f in rep["findings"]]
    assert hits[0]["severity"] == "error"
    assert text in hits[0]["message"]
    assert hits[0]["message"].startswith("lab-host: instance m1: field extra_args: ")
    assert rep["errors"] >= 1


def test_resolved_flags_are_what_the_argv_renders():
    rep = report(["--enable_prefix_caching", "--max-log-l", "100"])
    assert rep["errors"] == 0, [f["message"] for f in rep["findings"]]
    argv = rep["plan"]["instances"][0]["argv"]
    assert argv[-3:] == ["--enable-prefix-caching", "--max-log-len", "100"]


def test_llamacpp_flags_are_left_as_written():
    inst = {**INSTANCE, "engine": "llamacpp", "model": "/srv/m.gguf", "quantization": "gguf",
            "extra_args": ["--flash-attn", "off"]}
    rep = build_report(PlanInputs("h", copy.deepcopy(SERVER), [inst], generate_keys=True))
    assert rep["plan"]["instances"][0]["argv"][-2:] == ["--flash-attn", "off"]
    assert "unknown-flag" not in {f["rule"] for f in rep["findings"]}


def test_onecat_unknown_flag_is_only_a_warning():
    rep = report(["--some-onecat-flag"], engine="onecat")
    assert ("flag-not-recorded", "warning") in rules(rep)
    assert ("unknown-flag", "error") not in rules(rep)
