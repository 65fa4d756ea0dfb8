# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan's input schema (plan_inputs.yml, next to this file): where each input comes from.

Controller only. ``expressions(section)`` gives, for every input of a section (``arguments``, ``preflight``,
``member``), the Jinja expression over a host's variables that reads it; the serving_plan action reads a
section's inputs in one expression (``one_expression``). ``docs(section)`` gives the one-line docs.
A role's default is read through ``_defaults.expression``: the host's variable, else the role's default as the
role itself evaluates it.
"""

from __future__ import annotations

import functools
import os

from ansible_collections.volta.serving.plugins.plugin_utils import _defaults

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan_inputs.yml")
FILTERS = {"string": "string", "bool": "bool", "basename": "basename"}
ENTRY_KEYS = {"var", "role", "default", "as", "fields", "expression", "doc"}


class SchemaError(ValueError):
    """plan_inputs.yml declares an entry that cannot be read."""


@functools.cache
def schema():
    """The declaration, as loaded (section -> input name -> entry)."""
    return _defaults.load_yaml(SCHEMA)


def entry_expression(where, entry):
    """The Jinja expression of one entry (see plan_inputs.yml); *where* names it in errors."""
    if not isinstance(entry, dict) or set(entry) - ENTRY_KEYS or ("doc" not in entry):
        raise SchemaError(f"plan_inputs.yml: {where}: an entry is a mapping of {sorted(ENTRY_KEYS)} with a doc")
    kinds = [kind for kind in ("var", "fields", "expression") if kind in entry]
    if len(kinds) != 1:
        raise SchemaError(f"plan_inputs.yml: {where}: give exactly one of var, fields, expression")
    if "fields" in entry:
        # A dict value is a whole expression in Jinja (filters, comparisons): no parentheses, fewer tokens to compile.
        return "{" + ", ".join(f"{name!r}: {entry_expression(f'{where}.{name}', field)}"
                               for name, field in entry["fields"].items()) + "}"
    if "expression" in entry:
        return entry["expression"]
    return _var_expression(where, entry)


def _var_expression(where, entry):
    var = entry["var"]
    if "role" in entry:
        text = _defaults.expression(entry["role"], var)
    elif "default" in entry:
        text = f"{var} | default({_defaults.jinja_literal(entry['default'])})"
    else:
        text = var
    if "as" not in entry:
        return text
    if entry["as"] not in FILTERS:
        raise SchemaError(f"plan_inputs.yml: {where}: as is one of {sorted(FILTERS)}")
    return f"{text} | {FILTERS[entry['as']]}"  # the filter applies to the whole chain before it


@functools.cache
def _compiled(section):
    return tuple((name, entry_expression(f"{section}.{name}", entry)) for name, entry in schema()[section].items())


def expressions(section):
    """Input name -> the Jinja expression that reads it from a host's variables, in declaration order."""
    return dict(_compiled(section))


def docs(section):
    """Input name -> its one-line doc."""
    return {name: entry["doc"] for name, entry in schema()[section].items()}


def one_expression(expressions_by_name):
    """One Jinja dict expression whose key *name* holds the value of expressions_by_name[name], for each name."""
    return "{" + ", ".join(f"{name!r}: ({text})" for name, text in expressions_by_name.items()) + "}"
