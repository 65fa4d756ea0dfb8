# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan's input schema (plugins/plugin_utils/plan_inputs.yml) and what _plan_inputs makes of it."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.action.serving_plan import (
    ARGUMENT_SPEC,
    PREFLIGHT_VARS,
    VAR_DEFAULTS,
    member_inputs,
)
from ansible_collections.volta.serving.plugins.plugin_utils import _defaults, _plan_inputs


def entries(section):
    """(path, entry) of every entry of *section*, nested fields included."""
    todo = [(f"{section}.{name}", entry) for name, entry in _plan_inputs.schema()[section].items()]
    while todo:
        path, entry = todo.pop(0)
        yield path, entry
        todo += [(f"{path}.{name}", field) for name, field in (entry.get("fields") or {}).items()]


@pytest.mark.parametrize("section", ["arguments", "preflight", "member"])
def test_every_entry_has_a_doc_and_its_owner_role_has_the_variable(section):
    for path, entry in entries(section):
        assert isinstance(entry.get("doc"), str) and entry["doc"].strip(), path
        if "role" in entry:
            assert entry["var"] in _defaults.role_defaults(entry["role"]), path


def test_every_argument_read_from_the_host_is_declared_once():
    declared = set(_plan_inputs.schema()["arguments"])
    assert declared | {"shared"} == set(VAR_DEFAULTS)
    # The arguments no host variable stands for: given by the task, or computed by the action.
    computed = {"host_platform", "facts_from", "preflight", "index_timeout", "dump_dir", "report_warnings",
                "cluster_members"}
    assert set(ARGUMENT_SPEC) - set(VAR_DEFAULTS) == computed
    assert set(PREFLIGHT_VARS) == {"driver_version", "index_url", "hf_endpoint"}


@pytest.mark.parametrize(
    ("entry", "expression"),
    [
        ({"var": "volta_server", "default": None, "doc": "d"}, "volta_server | default(none)"),
        ({"var": "volta_lab", "default": False, "as": "bool", "doc": "d"}, "volta_lab | default(false) | bool"),
        ({"var": "x", "default": "64m", "doc": "d"}, 'x | default("64m")'),
        ({"var": "nvidia_driver_branch", "role": "nvidia_driver", "as": "string", "doc": "d"},
         'nvidia_driver_branch | default("580") | string'),
        ({"var": "engine_root", "role": "engine", "doc": "d"},
         "engine_root | default((volta_engines_root | default('/opt/volta/engines')))"),
        ({"expression": "a | length > 0", "doc": "d"}, "a | length > 0"),
        ({"fields": {"a": {"var": "x", "default": 1, "doc": "d"}, "b": {"expression": "y", "doc": "d"}}, "doc": "d"},
         "{'a': x | default(1), 'b': y}"),
    ],
)  # fmt: skip
def test_an_entry_becomes_one_expression(entry, expression):
    assert _plan_inputs.entry_expression("t", entry) == expression


@pytest.mark.parametrize(
    "entry",
    [
        {"var": "x"},  # no doc
        {"var": "x", "expression": "x", "doc": "d"},  # two kinds
        {"doc": "d"},  # no kind
        {"var": "x", "as": "int", "doc": "d"},  # an unknown filter
        {"var": "x", "typo": 1, "doc": "d"},  # an unknown key
    ],
)
def test_a_bad_entry_is_refused_with_its_place(entry):
    with pytest.raises(_plan_inputs.SchemaError, match=r"^plan_inputs\.yml: t: "):
        _plan_inputs.entry_expression("t", entry)


def test_the_role_defaults_are_rendered_over_the_hosts_own_variables():
    # Another member of a cluster: what it does not set is its role's default, over its own variables.
    templar = Templar(loader=DataLoader())
    read = member_inputs(templar, {"volta_models_root": "/data/models", "engine_vllm_version": "0.21.0",
                                   "volta_instances": [{"name": "big"}]})
    assert read["models_root"] == "/data/models"
    assert read["engine"]["vllm"] == {"version": "0.21.0",
                                      "torch_version": _defaults.literal("engine", "engine_vllm_torch_version"),
                                      "torch_cuda": _defaults.literal("engine", "engine_vllm_torch_cuda")}
    assert read["instances"] == [{"name": "big"}]
    assert read["models"] == {} and read["server"] is None
    plain = member_inputs(templar, {"model_root": trust_as_template("{{ '/m' }}")})
    assert plain["models_root"] == "/m" and plain["instances"] == []
