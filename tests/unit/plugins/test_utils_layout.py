"""Where the collection's Python helpers live: plugins/module_utils holds what modules import (Ansible ships
it to the hosts inside each module's payload), plugins/plugin_utils what only the controller runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
PACKAGE = "ansible_collections.volta.serving.plugins"


def _ours(path):
    """(package, name) of every volta.serving helper that *path* imports: ('module_utils', '_apt'), ..."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE + "."):
            parts = node.module[len(PACKAGE) + 1:].split(".")
            if len(parts) == 1:
                found |= {(parts[0], alias.name) for alias in node.names}
            else:
                found.add((parts[0], parts[1]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    parts = alias.name[len(PACKAGE) + 1:].split(".")
                    found.add((parts[0], parts[1]))
    return found


def _files(kind):
    return sorted(p for p in (PLUGINS / kind).glob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", _files("modules") + _files("module_utils"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_what_goes_to_the_hosts_imports_no_plugin_utils(path):
    assert {name for kind, name in _ours(path) if kind == "plugin_utils"} == set()


def test_module_utils_holds_only_what_modules_import():
    # Everything a module imports, directly or through another module_utils file; the rest is controller-only.
    reached, todo = set(), [name for path in _files("modules") for kind, name in _ours(path) if kind == "module_utils"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [n for kind, n in _ours(PLUGINS / "module_utils" / f"{name}.py") if kind == "module_utils"]
    assert sorted(p.stem for p in _files("module_utils")) == sorted(reached)


def test_the_import_reader_sees_both_forms(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(f"from {PACKAGE}.module_utils import _apt, _files as f\n"
                      f"from {PACKAGE}.plugin_utils._plan import build_report\n"
                      f"import {PACKAGE}.module_utils._venv\n")
    assert _ours(source) == {("module_utils", "_apt"), ("module_utils", "_files"),
                             ("plugin_utils", "_plan"), ("module_utils", "_venv")}
