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
