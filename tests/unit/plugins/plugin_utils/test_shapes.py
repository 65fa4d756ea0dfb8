# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of volta_server, volta_instances and api_gateway_keys (plugins/plugin_utils/_shapes.py).

Before: ``volta_instances: "chat"`` or ``volta_server: []`` stopped preflight with Ansible's argument-spec
dump and no host; ``api_gateway_keys`` as a list with "dict2items requires a dictionary"; ``gpu_count: -1``
with "GPU 0 does not exist ... (indexes 0--2)". Now one line each: host, variable, expected, given.
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import input_shapes as plugin
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report
from ansible_collections.volta.serving.plugins.plugin_utils._shapes import describe, shape_problems

SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
INSTANCE = {"name": "chat", "engine": "vllm", "model": "/srv/models/x", "gpus": [0], "port": 8001}


def problems(**variables):
    return shape_problems("h1", {"volta_server": SERVER, "volta_instances": [INSTANCE],
                                 "api_gateway_keys": {"chat": "k" * 40}, **variables})  # fmt: skip


def test_good_shapes_pass():
    assert problems() == []
    assert problems(volta_instances=None, api_gateway_keys=None) == []


@pytest.mark.parametrize(
    ("variables", "start"),
    [
        ({"volta_instances": "chat"},
         "h1: volta_instances: expected a list of instances (mappings with name, engine, model, gpus, port), "
         "got the string 'chat'. Fix: write volta_instances as a YAML list"),
        ({"volta_instances": {"name": "chat"}}, "h1: volta_instances: expected a list of instances"),
        ({"volta_instances": [INSTANCE, "chat"]},
         "h1: volta_instances[1]: expected an instance (a mapping with name, engine, model, gpus, port), "
         "got the string 'chat'. Fix: write volta_instances[1] as a mapping"),
        ({"volta_server": []},
         "h1: volta_server: expected a mapping (gpu_model, gpu_count, compute_capability, nvlink_islands, ram_gb), "
         "got a list of 0 items. Fix: describe the machine in host_vars/h1.yml"),
        ({"volta_server": None}, "h1: volta_server: expected a mapping (gpu_model"),
        ({"volta_server": {**SERVER, "gpu_count": -1}},
         "h1: volta_server.gpu_count: expected a whole number of GPUs, at least 1, got the number -1. Fix:"),
        ({"volta_server": {**SERVER, "gpu_count": 0}}, "h1: volta_server.gpu_count: expected a whole number"),
        ({"volta_server": {**SERVER, "gpu_count": "8"}},
         "h1: volta_server.gpu_count: expected a whole number of GPUs, at least 1, got the string '8'."),
        ({"volta_server": {**SERVER, "ram_gb": -4}},
         "h1: volta_server.ram_gb: expected the host memory in GB, a number of at least 0, got the number -4."),
        ({"volta_server": {**SERVER, "nvlink_islands": "0-3"}},
         "h1: volta_server.nvlink_islands: expected a list of lists of GPU indexes, got the string '0-3'."),
        ({"volta_server": {**SERVER, "nvlink_islands": [[0, -1]]}}, "h1: volta_server.nvlink_islands: expected"),
        ({"volta_server": {k: v for k, v in SERVER.items() if k != "gpu_model"}},
         "h1: volta_server.gpu_model: expected the GPU model as nvidia-smi names it, got nothing (not set, or null)."),
        ({"volta_server": {k: v for k, v in SERVER.items() if k != "compute_capability"}},
         "h1: volta_server.compute_capability: expected a string such as \"7.0\", got nothing (not set, or null)."),
        ({"api_gateway_keys": ["chat"]},
         "h1: api_gateway_keys: expected a mapping of instance name -> API key, got a list of 1 item. Fix:"),
    ],
)
def test_wrong_shape_is_one_line_naming_host_variable_expected_and_given(variables, start):
    (message,) = problems(**variables)
    assert message.startswith(start), message
    assert "\n" not in message


def test_keys_of_the_wrong_type_are_never_shown():
    secret = "sk-not-to-be-printed-0123456789abcdef"  # noqa: S105 - a test value, not a key
    (message,) = problems(api_gateway_keys=secret)
    assert secret not in message
    assert "got a string." in message


def test_every_problem_is_reported_at_once():
    assert len(problems(volta_server=[], volta_instances="chat", api_gateway_keys=[])) == 3


@pytest.mark.parametrize(
    ("value", "words"),
    [(None, "nothing (not set, or null)"), (True, "the boolean true"), (-1, "the number -1"),
     ("x" * 50, "the string '" + "x" * 37 + "...'"),
     ({}, "a mapping"), ([1, 2], "a list of 2 items"), (object(), "a value of type object")],
)  # fmt: skip
def test_describe(value, words):
    assert describe(value) == words


def test_filter_is_registered_and_wraps_the_check():
    assert plugin.FilterModule().filters() == {"input_shapes": plugin.input_shapes}
    assert plugin.input_shapes({"volta_server": SERVER, "volta_instances": "chat"}, "h1")[0].startswith(
        "h1: volta_instances: expected a list"
    )


# Through the plan (build_report): what follows a shape that is right but a value that is not.


def plan_errors(instance, server=None, keyed=("chat",)):
    report = build_report(PlanInputs("h1", server or SERVER, [instance], keyed_instances=list(keyed)))
    return [f["message"] for f in report["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("name", ["Bad Name!", "m1\n", ""])
def test_a_refused_name_is_one_error_not_a_second_about_keys(name):
    # Before: "... field api_gateway_keys: ... Fix: add None to api_gateway_keys" came with it.
    errors = plan_errors({**INSTANCE, "name": name}, keyed=())
    assert all("api_gateway_keys" not in message for message in errors), errors
    assert all("add None" not in message for message in errors), errors
    assert any("field name" in message for message in errors), errors


def test_an_instance_without_a_key_still_gets_the_key_error():
    (message,) = plan_errors(INSTANCE, keyed=())
    assert "h1: instance chat: field api_gateway_keys: no API key is configured" in message
    assert "Fix: add chat to api_gateway_keys" in message


def test_a_negative_gpu_count_derives_no_gpu_range():
    # Before: "GPU 0 does not exist: volta_server.gpu_count is -1 (indexes 0--2) ... between 0 and -2".
    errors = plan_errors(INSTANCE, server={**SERVER, "gpu_count": -1})
    assert not any("0--2" in message or "-2." in message for message in errors), errors


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"max_num_seqs": -4}, "h1: instance chat: field max_num_seqs: max_num_seqs -4 is not valid. "
                               "Why: max_num_seqs must be a positive integer."),
        ({"tensor_parallel": 0}, "h1: instance chat: field tensor_parallel: tensor_parallel 0 is not valid. "
                                 "Why: tensor_parallel must be a positive integer."),
        ({"gpus": [-1]}, "h1: instance chat: field gpus: gpus [-1] is not a list of GPU indexes (whole numbers "
                         "from 0). Why: gpus must be a list such as [0, 1]."),
        ({"port": -1}, "h1: instance chat: field port: port -1 is not usable. Why: ports are 1-65535"),
        ({"max_model_len": 0}, "h1: instance chat: field max_model_len: max_model_len 0 is not valid."),
    ],
)  # fmt: skip
def test_negative_and_zero_counts_are_named_with_the_field(changes, expected):
    errors = plan_errors({**INSTANCE, **changes})
    assert any(message.startswith(expected) for message in errors), errors


# volta_models (issue 52): a list gave Ansible's "_AnsibleTaggedList cannot be converted to a dict".

MODELS = {"qwen": {"hf": {"repo": "Qwen/Qwen3-8B", "revision": "0123456789abcdef0123456789abcdef01234567"}}}


def test_volta_models_as_a_list_names_the_mapping_and_the_fix():
    (message,) = problems(volta_models=[MODELS])
    assert message == (
        "h1: volta_models: expected a mapping of model name -> source (an instance names its model with "
        "model_source: <name>; each source is hf:, url: or path:), got a list of 1 item. Fix: write each model "
        "as a key of volta_models, without the '- ' of a list item: volta_models: {qwen: {hf: {repo: "
        "Qwen/Qwen3-8B, revision: <40-hex commit>}}}, and model_source: qwen in the instance that serves it."
    )


def test_volta_models_unset_null_or_a_mapping_pass():
    assert problems(volta_models=None) == problems(volta_models={}) == problems(volta_models=MODELS) == []


def test_a_token_inside_volta_models_is_never_shown():
    token = "hf_not_to_be_printed_0123456789"  # noqa: S105 - a test value, not a token
    messages = problems(volta_models={"qwen": [{"hf": {"repo": "a/b", "token": token}}], 7: "x"})
    assert len(messages) == 2 and not any(token in m for m in messages), messages


# Every wrong shape of the three inputs through the checks preflight runs on them, in order: the shape check
# (_shapes), the model sources (_model.resolve_instances), then the plan (_plan.build_report: _normalize and
# _inputs). Each must stop with one clear line naming the host, the variable or field and a fix; none may
# raise (before: volta_models as a list or a model_source that is a list raised TypeError).


def first_inputs_refusal(server=None, instances=(INSTANCE,), models=None):
    """The refusals of the first check that refuses (host-prefixed lines), or [] when every check passes."""
    from ansible_collections.volta.serving.plugins.module_utils._model import ModelError, resolve_instances

    server = SERVER if server is None else server

    variables = {"volta_server": server, "volta_instances": list(instances) if isinstance(instances, tuple)
                 else instances, "api_gateway_keys": {"chat": "k" * 40}, "volta_models": models}  # fmt: skip
    shapes = shape_problems("h1", variables)
    if shapes:
        return shapes
    try:
        resolved = resolve_instances(variables["volta_instances"], models or {}, "/srv/volta/models")
    except ModelError as exc:
        return [f"h1: serving_plan: {exc}"]
    report = build_report(PlanInputs("h1", server, resolved, keyed_instances=["chat"]))
    return [f["message"] for f in report["findings"] if f["severity"] == "error"]


def with_source(ref):
    return [{k: v for k, v in INSTANCE.items() if k != "model"} | {"model_source": ref}]


WRONG_SHAPES = [
    # (what, inputs, fragment of the refusal)
    ("volta_models a list", {"models": [MODELS]}, "h1: volta_models: expected a mapping of model name -> source"),
    ("volta_models a string", {"models": "qwen"}, "h1: volta_models: expected a mapping of model name -> source"),
    ("volta_models a number", {"models": 7}, "got the number 7. Fix: write volta_models as a mapping"),
    ("a model a string", {"models": {"qwen": "Qwen/Qwen3-8B"}},
     "h1: volta_models.qwen: expected a source (a mapping with one of hf, url or path), got the string"),
    ("a model a list", {"models": {"qwen": [MODELS["qwen"]]}}, "h1: volta_models.qwen: expected a source"),
    ("a model name a number", {"models": {7: MODELS["qwen"]}}, "h1: volta_models: expected model names that are"),
    ("hf a string", {"models": {"qwen": {"hf": "Qwen/Qwen3-8B"}}, "instances": with_source("qwen")},
     "model qwen: hf.repo is 'Qwen/Qwen3-8B'; a Hugging Face repository is ORG/NAME; fix: write hf:"),
    ("revision a number", {"models": {"qwen": {"hf": {"repo": "a/b", "revision": 1234}}},
                           "instances": with_source("qwen")}, "model qwen: hf.revision is '1234', not a commit id"),
    ("allow_patterns a string",
     {"models": {"qwen": {"hf": dict(MODELS["qwen"]["hf"], allow_patterns="*.json")}},
      "instances": with_source("qwen")},
     "model qwen: hf.allow_patterns is not a list of glob patterns"),
    ("path a number", {"models": {"qwen": {"path": 7}}, "instances": with_source("qwen")},
     "model qwen: path 7 is not absolute"),
    ("url null", {"models": {"qwen": {"url": None, "sha256": "a" * 64}}, "instances": with_source("qwen")},
     "model qwen: url 'None' is not an http(s) URL of a file"),
    ("model_source a list", {"models": MODELS, "instances": with_source(["qwen"])},
     "instance chat: model_source ['qwen'] is not a model name"),
    ("model_source a number", {"models": MODELS, "instances": with_source(7)},
     "instance chat: model_source 7 is not a model name"),
    ("model_source unknown", {"models": MODELS, "instances": with_source("qwen3")},
     "instance chat: model_source 'qwen3' is not in volta_models; known: qwen"),
    ("volta_instances a mapping", {"instances": INSTANCE}, "h1: volta_instances: expected a list of instances"),
    ("volta_instances a string", {"instances": "chat"}, "h1: volta_instances: expected a list of instances"),
    ("an instance a list", {"instances": [[INSTANCE]]}, "h1: volta_instances[0]: expected an instance"),
    ("an instance null", {"instances": [None]}, "h1: volta_instances[0]: expected an instance"),
    ("gpus a number", {"instances": [INSTANCE | {"gpus": 0}]}, "field gpus: gpus 0 is not a list of GPU indexes"),
    ("gpus a string", {"instances": [INSTANCE | {"gpus": "0,1"}]}, "field gpus: gpus '0,1' is not a list"),
    ("port a string", {"instances": [INSTANCE | {"port": "8001"}]}, "field port: port '8001' is not valid."),
    ("port null", {"instances": [INSTANCE | {"port": None}]}, "field port: port is not set."),
    ("name a number", {"instances": [INSTANCE | {"name": 7}]}, "field name: name 7 cannot be part of a systemd unit"),
    ("engine a list", {"instances": [INSTANCE | {"engine": ["vllm"]}]}, "field engine: engine ['vllm'] is not known"),
    ("model a mapping", {"instances": [INSTANCE | {"model": {"path": "/x"}}]}, "field model: model {'path': '/x'}"),
    ("max_model_len a string", {"instances": [INSTANCE | {"max_model_len": "8k"}]},
     "field max_model_len: max_model_len '8k' is not valid. Why: max_model_len must be a positive integer."),
    ("extra_args a string", {"instances": [INSTANCE | {"extra_args": "--enforce-eager"}]},
     "field extra_args: extra_args '--enforce-eager' is not a list of strings."),
    ("env a list", {"instances": [INSTANCE | {"env": ["A=1"]}]}, "field env: env ['A=1'] is not a mapping"),
    # null and booleans in YAML's words, not Python's (before: "extra_args None", "gpus True").
    ("extra_args null", {"instances": [INSTANCE | {"extra_args": None}]},
     "field extra_args: extra_args null is not a list of strings."),
    ("env null", {"instances": [INSTANCE | {"env": None}]}, "field env: env null is not a mapping of names"),
    ("gpus a boolean", {"instances": [INSTANCE | {"gpus": True}]}, "field gpus: gpus true is not a list of GPU"),
    ("enabled a number", {"instances": [INSTANCE | {"enabled": 1}]}, "field enabled: enabled 1 is not valid."),
    ("secret_env a string", {"instances": [INSTANCE | {"secret_env": "A=1"}]},
     "field secret_env: secret_env is not a mapping of names to values."),
    ("allow a mapping", {"instances": [INSTANCE | {"allow": {"rule": "x"}}]},
     "field allow: allow {'rule': 'x'} is not a list."),
    ("cluster a list", {"instances": [INSTANCE | {"cluster": ["h1", "h2"]}]},
     "field cluster: cluster ['h1', 'h2'] is not a mapping of members and interface."),
    ("enabled a string", {"instances": [INSTANCE | {"enabled": "no"}]}, "field enabled: enabled 'no' is not valid."),
    ("volta_server a list", {"server": [SERVER]}, "h1: volta_server: expected a mapping (gpu_model"),
    ("volta_server a string", {"server": "v100"}, "h1: volta_server: expected a mapping (gpu_model"),
    ("gpu_count a string", {"server": SERVER | {"gpu_count": "8"}}, "h1: volta_server.gpu_count: expected a whole"),
    ("compute_capability null", {"server": SERVER | {"compute_capability": None}},
     "h1: volta_server.compute_capability: expected a string such as \"7.0\", got nothing (not set, or null)."),
    ("compute_capability a list", {"server": SERVER | {"compute_capability": [7, 0]}},
     "field volta_server.compute_capability: compute_capability [7, 0] is not MAJOR.MINOR."),
    ("nvlink_islands a mapping", {"server": SERVER | {"nvlink_islands": {"0": [0, 1]}}},
     "h1: volta_server.nvlink_islands: expected a list of lists of GPU indexes, got a mapping."),
    ("ram_gb a string", {"server": SERVER | {"ram_gb": "251G"}}, "h1: volta_server.ram_gb: expected the host memory"),
    ("gpu_model a number", {"server": SERVER | {"gpu_model": 100}}, "h1: volta_server.gpu_model: expected the GPU"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "inputs", "fragment"), WRONG_SHAPES, ids=[c[0] for c in WRONG_SHAPES])
def test_every_wrong_shape_is_one_clear_refusal(what, inputs, fragment):
    refusals = first_inputs_refusal(**inputs)
    assert refusals, f"{what}: passed silently"
    assert any(fragment in message for message in refusals), (what, refusals)
    assert all(message.startswith("h1: ") and ("Fix: " in message or "fix: " in message) for message in refusals)
    assert not any(word in " ".join(refusals) for word in ("Traceback", "_AnsibleTagged", "NoneType", "object has"))


def test_the_table_starts_from_inputs_that_pass():
    assert first_inputs_refusal() == []
    assert first_inputs_refusal(models=MODELS, instances=with_source("qwen")) == []
