# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' layout: each role is a room of its own (docs/dev/internals.md).

- No role includes another public role's tasks (include_role/import_role, with or without tasks_from):
  shared steps live in internal roles (``roles/_name``), which refuse a direct use (their first task checks
  ``ansible_parent_role_names``) and take their inputs as ``_name_*`` variables under the include's ``vars:``.
- No role reads another role's variables, public (``<role>_*``) or private (``__<role>_*``): what more than
  one role needs comes from the serving plan (``plan['shared']``, plugins/action/serving_plan.py). The read
  is found the way a reviewer finds it: an identifier in a role's tasks, handlers, vars, defaults or
  templates that starts with another role's prefix (a module's dotted name, volta.serving.engine_installs,
  is not a variable).
- An include chain from a role's tasks/main.yml is at most MAX_DEPTH hops deep, internal roles included.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "roles"
MAX_DEPTH = 3
INCLUDE_TASKS = ("include_tasks", "import_tasks")
INCLUDE_ROLE = ("include_role", "import_role")
# The files of a role where a variable is read (meta/ documents, files/ are copied as they are).
READ_DIRS = ("tasks", "handlers", "vars", "defaults", "templates")
# An identifier that is not part of a dotted name or of a longer identifier.
IDENTIFIER = re.compile(r"(?<![\w.])(__)?([a-z][a-z0-9_]*)")
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def role_names(roles=ROLES):
    return sorted(p.name for p in roles.iterdir() if (p / "tasks").is_dir() or (p / "meta").is_dir())


def load(path):
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError):
        return []


def tasks_of(tasks):
    """Every task of a task list, blocks included."""
    for task in tasks if isinstance(tasks, list) else []:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from tasks_of(task.get(key))


def action(task, names):
    """(short action name, its argument) of a task whose action is one of *names*, else None."""
    for key, value in task.items():
        if key.rsplit(".", 1)[-1] in names:
            return key.rsplit(".", 1)[-1], value
    return None


def children(roles, role, path):
    """(role, tasks file) of every include in the tasks file *path* of *role*."""
    out = []
    for task in tasks_of(load(path)):
        found = action(task, INCLUDE_TASKS)
        if found:
            target = found[1].get("file") if isinstance(found[1], dict) else found[1]
            pattern = re.sub(r"\{\{.*?\}\}", "*", str(target))
            out.extend((role, p) for p in sorted((roles / role / "tasks").glob(pattern)))
        found = action(task, INCLUDE_ROLE)
        if found and isinstance(found[1], dict):
            name = str(found[1].get("name", "")).rsplit(".", 1)[-1]
            entry = str(found[1].get("tasks_from", "main"))
            entry = entry if entry.endswith((".yml", ".yaml")) else f"{entry}.yml"
            target = roles / name / "tasks" / entry
            if target.is_file():
                out.append((name, target))
    return out


def deepest(roles, role, path, seen=()):
    """The longest include chain from *path*, as a list of files (a loop ends the chain)."""
    if path in seen:
        return [path]
    best = []
    for child_role, child in children(roles, role, path):
        chain = deepest(roles, child_role, child, (*seen, path))
        if len(chain) > len(best):
            best = chain
    return [path, *best]


def depth_problems(roles=ROLES):
    out = []
    for role in role_names(roles):
        main = roles / role / "tasks" / "main.yml"
        if not main.is_file():
            continue
        chain = deepest(roles, role, main)
        if len(chain) - 1 > MAX_DEPTH:
            hops = " -> ".join(str(p.relative_to(roles)) for p in chain)
            out.append(f"{role}: {len(chain) - 1} hops of includes ({hops}); at most {MAX_DEPTH}: merge a file "
                       "into its includer")
    return out


def reach_in_problems(roles=ROLES):
    """Every include of another public role's tasks from a role, and every direct use of an internal role's
    file other than through include_role/import_role."""
    out = []
    for role in role_names(roles):
        for path in sorted((roles / role).glob("tasks/*.yml")) + sorted((roles / role).glob("handlers/*.yml")):
            for task in tasks_of(load(path)):
                found = action(task, INCLUDE_ROLE)
                if not found or not isinstance(found[1], dict):
                    continue
                name = str(found[1].get("name", "")).rsplit(".", 1)[-1]
                if name != role and not name.startswith("_"):
                    out.append(f"{path.relative_to(roles)}: includes the tasks of the public role {name} "
                               f"({found[1].get('tasks_from', 'main')}); put the shared step in an internal role "
                               "(roles/_name) and include that")
    return out


def prefixes(roles=ROLES):
    """Role -> the prefix of its variables (an internal role _name: name_), longest first."""
    return sorted(((r, f"{r.lstrip('_')}_") for r in role_names(roles)), key=lambda p: -len(p[1]))


def owner(name, owners):
    return next((role for role, prefix in owners if name.startswith(prefix)), None)


def read_files(role_dir):
    for sub in READ_DIRS:
        yield from (p for p in sorted((role_dir / sub).rglob("*")) if p.is_file())


def foreign_reads(roles=ROLES):
    """(file:line, name, owner) of each identifier in a role's files that names another role's variable."""
    owners = prefixes(roles)
    out = []
    for role in role_names(roles):
        for path in read_files(roles / role):
            yaml_file = path.suffix in (".yml", ".yaml")
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                code = line.split("#", 1)[0] if yaml_file and "{#" not in line else line
                for match in IDENTIFIER.finditer(code):
                    name = match.group(2)
                    found = owner(name, owners)
                    if found and found != role and found.lstrip("_") != name:
                        out.append((f"{path.relative_to(roles)}:{number}", (match.group(1) or "") + name, found))
    return out


def internal_roles_without_guard(roles=ROLES):
    """Internal roles whose tasks/main.yml does not start by refusing a direct use."""
    out = []
    for role in role_names(roles):
        if not role.startswith("_"):
            continue
        tasks = list(tasks_of(load(roles / role / "tasks" / "main.yml")))
        first = str(tasks[0]) if tasks else ""
        if "ansible_parent_role_names" not in first:
            out.append(f"{role}: the first task of tasks/main.yml must refuse a direct use "
                       "(a check on ansible_parent_role_names)")
    return out


def test_no_role_includes_another_public_roles_tasks():
    assert reach_in_problems() == []


def test_no_role_reads_another_roles_variables():
    found = [f"{where}: {name} belongs to {role}; read it from the serving plan (plan['shared']) or take it as "
             "an internal role's input" for where, name, role in foreign_reads()]
    assert found == []


def test_includes_are_at_most_three_hops_deep():
    assert depth_problems() == []


def test_internal_roles_refuse_a_direct_use():
    assert internal_roles_without_guard() == []


# The checks above on small trees that break each rule: each must find its problem.
def make_role(roles, name, tasks=None, files=None):
    (roles / name / "tasks").mkdir(parents=True, exist_ok=True)
    for file, content in ({"main.yml": tasks or []} | (files or {})).items():
        path = roles / name / file if "/" in file else roles / name / "tasks" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content), encoding="utf-8")


@pytest.fixture
def roles(tmp_path):
    roles = tmp_path / "roles"
    make_role(roles, "alpha", [{"name": "x", "ansible.builtin.debug": {"msg": "{{ alpha_port }}"}}])
    make_role(roles, "_shared", [{"name": "guard", "volta.serving.check": {"that": "ansible_parent_role_names"}}])
    return roles


def test_the_reach_in_check_finds_a_tasks_from_into_a_public_role(roles):
    reach_in = {"name": "volta.serving.alpha", "tasks_from": "keys.yml"}
    make_role(roles, "beta", [{"name": "in", "ansible.builtin.include_role": reach_in},
                              {"name": "ok", "ansible.builtin.include_role": {"name": "volta.serving._shared"}}])
    assert reach_in_problems(roles) == [
        "beta/tasks/main.yml: includes the tasks of the public role alpha (keys.yml); put the shared step in an "
        "internal role (roles/_name) and include that"]


def test_the_read_check_finds_public_and_private_reads_but_not_module_names(roles):
    make_role(roles, "beta", [{"name": "r", "volta.serving.alpha_state": {"x": "{{ alpha_port + __alpha_key }}"}}],
              {"templates/b.j2": "{{ ansible_managed | comment }}\nport {{ beta_port }} {{ alpha_port }}\n",
               "defaults/main.yml": "beta_port: 1\nbeta_shared_x: '{{ _shared_y }}'\n"})
    assert foreign_reads(roles) == [("beta/tasks/main.yml:3", "alpha_port", "alpha"),
                                    ("beta/tasks/main.yml:3", "__alpha_key", "alpha"),
                                    ("beta/templates/b.j2:2", "alpha_port", "alpha")]


def test_the_depth_check_counts_includes_and_internal_roles(roles):
    shared_c = {"name": "volta.serving._shared", "tasks_from": "c"}
    make_role(roles, "beta", [{"name": "a", "ansible.builtin.include_tasks": "a.yml"}],
              {"a.yml": [{"name": "b", "ansible.builtin.import_tasks": "b.yml"}],
               "b.yml": [{"name": "c", "ansible.builtin.include_role": shared_c}]})
    make_role(roles, "_shared", [{"name": "guard", "volta.serving.check": {"that": "ansible_parent_role_names"}}],
              {"c.yml": [{"name": "d", "ansible.builtin.include_tasks": "d.yml"}], "d.yml": []})
    assert depth_problems(roles) == [
        "beta: 4 hops of includes (beta/tasks/main.yml -> beta/tasks/a.yml -> beta/tasks/b.yml -> "
        "_shared/tasks/c.yml -> _shared/tasks/d.yml); at most 3: merge a file into its includer"]


def test_the_guard_check_finds_an_internal_role_without_one(roles):
    make_role(roles, "_open", [{"name": "work", "ansible.builtin.debug": {"msg": "x"}}])
    assert internal_roles_without_guard(roles) == [
        "_open: the first task of tasks/main.yml must refuse a direct use (a check on ansible_parent_role_names)"]
