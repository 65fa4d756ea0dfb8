# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_defaults: the pins and paths are read from the roles' defaults files, their one home."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils import _defaults, _plan

ROLES = Path(__file__).resolve().parents[4] / "roles"


def test_literals_follow_the_defaults_files():
    engine = yaml.safe_load((ROLES / "engine" / "defaults" / "main.yml").read_text())
    assert _defaults.engine_versions()["vllm"]["version"] == engine["engine_vllm_version"]
    assert _defaults.engine_versions()["onecat"]["torch_cuda"] == engine["engine_onecat_torch_cuda"]
    assert engine["engine_root"] == "{{ volta_engines_root | default('/opt/volta/engines') }}"
    assert _defaults.literal("engine", "engine_root") == "/opt/volta/engines"
    assert _defaults.literal("engine_service", "engine_service_ray_ports")["gcs"] == 6379  # a plain value as it is


@pytest.mark.parametrize(
    ("value", "expression"),
    [
        ("{{ volta_engines_root | default('/opt/volta/engines') }}",
         "volta_engines_root | default('/opt/volta/engines')"),
        ("  {{x|default('{{ y }}')}}\n", "x|default('{{ y }}')"),  # a brace inside a string is the string's
        ("{{ a }}/{{ b }}", None),  # two expressions
        ("/srv/{{ a }}", None),  # text around the expression
        ("{% if a %}b{% endif %}", None),  # a statement
        ("{{ a", None),  # not Jinja
        ("plain", None),
        (580, None),
        ({"gcs": 6379}, None),
    ],
)
def test_a_default_is_one_expression_by_jinjas_own_lexer(value, expression):
    assert _defaults.default_expression(value) == expression


def test_the_defaults_module_parses_no_jinja_with_a_regex():
    source = Path(_defaults.__file__).read_text()
    assert "import re" not in source and "re.compile" not in source


def test_expressions_keep_the_role_default():
    assert _defaults.expression("engine", "engine_vllm_version") == (
        f'engine_vllm_version | default("{_defaults.engine_versions()["vllm"]["version"]}")')
    assert _defaults.expression("engine", "engine_root").startswith("engine_root | default((volta_engines_root")


def test_the_plan_defaults_come_from_the_roles():
    report = _plan.build_report(_plan.PlanInputs("h", None, []))
    assert report["plan"] is not None
    assert _plan.default_settings()["engines_root"] == _defaults.literal("engine", "engine_root")
    assert _plan.default_settings()["driver_branch"] == str(_defaults.literal("nvidia_driver", "nvidia_driver_branch"))


def test_load_yaml_reads_each_role_file_as_pyyaml_safe_load_does():
    files = sorted(ROLES.glob("*/defaults/main.yml")) + sorted(ROLES.glob("*/meta/argument_specs.yml"))
    assert len(files) > 20
    for path in files:
        assert _defaults.load_yaml(str(path)) == yaml.safe_load(path.read_text()), path


def test_load_yaml_refuses_python_objects(tmp_path):
    unsafe = tmp_path / "unsafe.yml"
    unsafe.write_text("value: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="python/object/apply"):
        _defaults.load_yaml(str(unsafe))
