# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lint: every task-level name a role defines is its own, so a caller's variable cannot replace it.

A name a task defines (vars:, register:, set_fact, loop_var, index_var) in roles/<role>/tasks or
handlers must start with `__<role>_` (private) or `<role>_` (a public result the role documents).
Allowed otherwise: another role's public variables handed to it (include_role/import_role vars:
the options of that role's argument spec) and Ansible's own connection variables (ansible_*).
Why: Ansible resolves a short name such as `__found` from the innermost scope that has it, and a
registered variable of the caller (host scope) silently wins over a role's set_fact of that name in
some paths; ansible-core 2.19 showed a caller's `__pin` replacing the role's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
INCLUDES = ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role")
SET_FACT = ("ansible.builtin.set_fact", "set_fact")


def spec_options(role):
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
    return {name for entry in spec["argument_specs"].values() for name in (entry.get("options") or {})}


def defined_names(tasks):
    """(name, what, included role or None) for each name the tasks define, blocks included."""
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        for key in ("block", "rescue", "always"):
            yield from defined_names(task.get(key))
        included = next((task[k]["name"].rsplit(".", 1)[-1] for k in INCLUDES if isinstance(task.get(k), dict)), None)
        for name in task.get("vars") or {}:
            yield name, "vars", included
        if task.get("register"):
            yield task["register"], "register", None
        for key in SET_FACT:
            if isinstance(task.get(key), dict):
                yield from ((n, "set_fact", None) for n in task[key] if n != "cacheable")
        for key in ("loop_var", "index_var"):
            if key in (task.get("loop_control") or {}):
                yield task["loop_control"][key], key, None


def violations(role):
    """An internal role (``_name``) names its own variables ``__name_...`` (private) and ``_name_...`` (its
    inputs and results), as the callers pass them."""
    base = role.lstrip("_")
    own = (f"__{base}_", f"_{base}_") if role.startswith("_") else (f"__{role}_", f"{role}_")
    out = []
    for path in sorted((ROLES / role).glob("tasks/*.yml")) + sorted((ROLES / role).glob("handlers/*.yml")):
        for name, what, included in defined_names(yaml.safe_load(path.read_text(encoding="utf-8"))):
            if name.startswith((*own, "ansible_")):
                continue
            if included and name in spec_options(included):
                continue
            out.append(f"{path.relative_to(ROLES.parent)}: {what} {name} (name it {own[0]}...)")
    return out


@pytest.mark.parametrize("role", sorted(p.name for p in ROLES.iterdir() if (p / "tasks").is_dir()))
def test_task_level_names_carry_the_role_prefix(role):
    assert violations(role) == []


def test_the_check_finds_a_short_name(tmp_path, monkeypatch):
    role = tmp_path / "roles" / "demo"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump([
        {"name": "a", "ansible.builtin.set_fact": {"__found": 1, "__demo_ok": 2}},
        {"name": "b", "block": [{"name": "c", "ansible.builtin.debug": {"msg": "x"}, "vars": {"__pin": 1},
                                 "register": "demo_result"}]},
    ]))
    monkeypatch.setattr(__import__(__name__), "ROLES", tmp_path / "roles")
    assert violations("demo") == ["roles/demo/tasks/main.yml: set_fact __found (name it __demo_...)",
                                  "roles/demo/tasks/main.yml: vars __pin (name it __demo_...)"]


def test_an_internal_role_names_its_variables_without_its_underscore(tmp_path, monkeypatch):
    role = tmp_path / "roles" / "_demo"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump([
        {"name": "a", "ansible.builtin.set_fact": {"__demo_ok": 1, "_demo_result": 2, "___demo_x": 3, "__found": 4}},
    ]))
    monkeypatch.setattr(__import__(__name__), "ROLES", tmp_path / "roles")
    assert violations("_demo") == ["roles/_demo/tasks/main.yml: set_fact ___demo_x (name it __demo_...)",
                                   "roles/_demo/tasks/main.yml: set_fact __found (name it __demo_...)"]
