# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _preflight_inputs: the plan's first inputs and the models, read from the host's variables."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import preflight_inputs as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _preflight_inputs as pi
from ansible_collections.volta.serving.plugins.plugin_utils._shapes import shape_problems

SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/x", "gpus": [0], "port": 8001}
QWEN = {"hf": {"repo": "Qwen/Qwen3-8B", "revision": "1" * 40}}


def test_the_names_are_the_serving_plans():
    assert pi.shape_names() == ("volta_server", "volta_instances", "api_gateway_keys", "volta_models")


@pytest.mark.parametrize("variables", [
    {"volta_server": SERVER, "volta_instances": [CHAT], "api_gateway_keys": {"chat": "k"}},
    {"volta_server": SERVER, "volta_instances": "chat"},
    {"volta_server": [], "volta_instances": [CHAT, "chat2"], "api_gateway_keys": ["chat"]},
    {},
    {"volta_server": None, "other": 1},
])
def test_input_shapes_are_the_shape_checks_of_the_same_variables(variables):
    want = shape_problems("h1", {name: variables.get(name) for name in pi.shape_names()})
    assert plugin.preflight_input_shapes(variables, "h1") == want


def test_input_shapes_name_the_host_and_the_variable():
    (line,) = plugin.preflight_input_shapes({"volta_server": SERVER, "volta_instances": "chat"}, "h1")
    assert line.startswith("h1: volta_instances: expected a list of instances")
    assert plugin.preflight_input_shapes({"volta_server": SERVER, "volta_instances": [CHAT]}, "h1") == []


@pytest.mark.parametrize(("variables", "want"), [
    ({}, {"instances": [], "models": {}, "root": "", "endpoint": ""}),
    ({"volta_instances": [CHAT], "volta_models": {"q": QWEN}, "model_root": "/m", "model_hf_endpoint": "http://hub"},
     {"instances": [CHAT], "models": {"q": QWEN}, "root": "/m", "endpoint": "http://hub"}),
    # The models' root as the model layer's own default reads it, unless model_root is set.
    ({"volta_models_root": "/v"}, {"instances": [], "models": {}, "root": "/v", "endpoint": ""}),
    ({"volta_models_root": "/v", "model_root": "/m"}, {"instances": [], "models": {}, "root": "/m", "endpoint": ""}),
    # Jinja's default(): a variable set to null stays null.
    ({"volta_instances": None}, {"instances": None, "models": {}, "root": "", "endpoint": ""}),
])
def test_model_inputs(variables, want):
    assert pi.model_inputs(variables) == want


def test_model_reads_turn_a_source_into_its_served_path_under_the_root():
    chat = {key: value for key, value in CHAT.items() if key != "model"} | {"model_source": "q"}
    got = plugin.preflight_model_reads({"volta_instances": [chat], "volta_models": {"q": QWEN}, "model_root": "/m",
                                        "model_hf_endpoint": "http://hub"})
    path = f"/m/q@{'1' * 40}"
    assert got == {"paths": [path], "pending": [], "hub": [
        {"path": path, "endpoint": "http://hub", "repo": "Qwen/Qwen3-8B", "revision": "1" * 40, "allow_patterns": [],
         "token": ""}]}
    assert plugin.preflight_model_reads({}) == {"paths": [], "hub": [], "pending": []}
