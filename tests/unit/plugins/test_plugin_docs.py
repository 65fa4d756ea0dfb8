# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every plugin's DOCUMENTATION, EXAMPLES and RETURN parse as YAML (a continuation line with ': ' does not).

ansible-test sanity finds the same, minutes later; this keeps it in the fast loop.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
import yaml

PLUGINS = pathlib.Path(__file__).resolve().parents[3] / "plugins"
DOC_NAMES = ("DOCUMENTATION", "EXAMPLES", "RETURN")


def _docs():
    for path in sorted(PLUGINS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in DOC_NAMES and isinstance(node.value, ast.Constant)):
                yield pytest.param(node.value.value, id=f"{path.relative_to(PLUGINS)}:{node.targets[0].id}")


DOCS = list(_docs())
# Sidecar docs of plugins; plugin_utils holds no plugin (its plan_inputs.yml is the serving plan's input schema, its
# settings_checks/ the settings registry).
YML_DOCS = sorted(p for p in PLUGINS.rglob("*.yml") if "plugin_utils" not in p.relative_to(PLUGINS).parts)


def test_the_plugins_have_docs():
    assert len([d for d in DOCS if d.id.endswith(":DOCUMENTATION")]) >= 17  # the modules alone


@pytest.mark.parametrize("text", DOCS)
def test_the_docs_parse(text):
    assert yaml.safe_load(text) is not None


@pytest.mark.parametrize("path", YML_DOCS, ids=lambda p: str(p.relative_to(PLUGINS)))
def test_the_filter_docs_parse(path):
    assert set(yaml.safe_load(path.read_text())) >= {"DOCUMENTATION"}
