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

# <collection>/plugins/plugin_utils/_defaults.py -> <collection>/roles
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


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


@functools.cache
def _jinja():
    import jinja2.sandbox  # controller only: Ansible's own Jinja

    return jinja2.sandbox.ImmutableSandboxedEnvironment()


def default_expression(value):
    """The Jinja expression of a role default written as one expression ("{{ x | default('y') }}"), or None
    for any other value (a plain value, or a template that is more than one expression).

    Jinja's own lexer takes the default apart: its tokens must be one ``{{ ... }}`` and nothing else
    around it but whitespace, and the expression is the source of the tokens between the two.
    """
    if not isinstance(value, str) or "{" not in value:
        return None
    import jinja2  # controller only: Ansible's own Jinja

    try:
        tokens = [(kind, text) for _line, kind, text in _jinja().lex(value.strip())]
    except jinja2.TemplateSyntaxError:
        return None
    if len(tokens) < 3 or tokens[0][0] != "variable_begin" or tokens[-1][0] != "variable_end":
        return None
    inner = tokens[1:-1]
    if any(kind in ("variable_begin", "variable_end", "block_begin", "data") for kind, _text in inner):
        return None
    return "".join(text for _kind, text in inner).strip()


def jinja_literal(value):
    """*value* written as a Jinja literal (None -> none, True -> true, strings quoted)."""
    return "none" if value is None else json.dumps(value)


def expression(role, var):
    """A Jinja expression of the host's variables: var as the host sets it, else the role's default for it.

    A default written as one expression ("{{ volta_engines_root | default('/opt/volta/engines') }}") is read
    inline, as the role would evaluate it (one expression for every input: see docs/dev/internals.md); a plain
    value becomes a literal.
    """
    value = role_defaults(role)[var]
    inner = default_expression(value)
    return f"{var} | default({f'({inner})' if inner else jinja_literal(value)})"


@functools.cache
def literal(role, var):
    """The role's default of var when nothing is set: the value, or its expression rendered over no variables."""
    value = role_defaults(role)[var]
    inner = default_expression(value)
    if inner is None:
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            raise ValueError(f"roles/{role}/defaults/main.yml: {var} is not one expression: {value}")
        return value
    try:
        return _jinja().compile_expression(inner)()
    except Exception as exc:
        raise ValueError(f"roles/{role}/defaults/main.yml: {var} has no default of its own: {value} ({exc})") from exc


def engine_versions():
    """{'vllm': {version, torch_version, torch_cuda}, 'onecat': {...}} as the engine role pins them."""
    return {flavour: {key: str(literal("engine", f"engine_{flavour}_{key}"))
                      for key in ("version", "torch_version", "torch_cuda")}
            for flavour in ("vllm", "onecat")}
