# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' defaults (roles/<role>/defaults/main.yml), read by the controller-side code.

Each pin and path has one home, its role's defaults file; the serving plan (the action plugin and
_plan.build_report) reads it from there instead of keeping a copy. Controller only: it reads the
collection's own files (never imported by a module that runs on a host).
"""

from __future__ import annotations

import functools
import json
import os
import re

# <collection>/plugins/plugin_utils/_defaults.py -> <collection>/roles
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
# "{{ EXPR }}": a default that is one Jinja expression ("{{ volta_engines_root | default('/opt/volta/engines') }}").
_EXPRESSION = re.compile(r"^\{\{(?P<expr>[^{}]*)\}\}$")
_LAST_LITERAL = re.compile(r"default\('(?P<value>[^']*)'\)\s*$")


def load_yaml(path):
    """The data of one of the collection's own YAML files, with libyaml's parser where PyYAML has it.

    The pure-Python parser takes about ten times as long, and the serving plan reads every role's argument
    spec in each run's preflight.
    """
    import yaml  # controller only: the collection's own YAML

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)  # noqa: S506  CSafeLoader or SafeLoader, both safe


@functools.cache
def role_defaults(role):
    return load_yaml(os.path.join(ROLES, role, "defaults", "main.yml")) or {}


def expression(role, var):
    """A Jinja expression of the host's variables: var as the host sets it, else the role's default for it.

    A default written as one expression ("{{ volta_engines_root | default('/opt/volta/engines') }}") is
    evaluated as the role would evaluate it; a plain value becomes a literal.
    """
    value = role_defaults(role)[var]
    match = _EXPRESSION.match(value.strip()) if isinstance(value, str) else None
    fallback = f"({match.group('expr').strip()})" if match else json.dumps(value)
    return f"{var} | default({fallback})"


def literal(role, var):
    """The role's default of var when nothing is set: the value, or the last literal of its expression."""
    value = role_defaults(role)[var]
    match = _EXPRESSION.match(value.strip()) if isinstance(value, str) else None
    if not match:
        return value
    last = _LAST_LITERAL.search(match.group("expr").strip())
    if not last:
        raise ValueError(f"roles/{role}/defaults/main.yml: {var} has no literal fallback: {value}")
    return last.group("value")


def engine_versions():
    """{'vllm': {version, torch_version, torch_cuda}, 'onecat': {...}} as the engine role pins them."""
    return {flavour: {key: str(literal("engine", f"engine_{flavour}_{key}"))
                      for key in ("version", "torch_version", "torch_cuda")}
            for flavour in ("vllm", "onecat")}
