# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings check of one host: its name, and every registry variable it sets, before any host changes.

Controller only (reads the collection's own files). The registry is ``settings_checks/<role>.yml``: one
entry per option of each public role's argument spec (main entry point), naming its check, a kind of
``_settings_kinds.KINDS`` or ``_module:function`` (a function of ``plugins/plugin_utils/_module.py``).
``check_host`` takes the values a host sets (inventory, group and extra variables, templated; the roles'
defaults are trusted and never come here) and returns one message per problem, ``HOST: VARIABLE: why.
Fix: fix.``: first the value's type against the role's argument spec, then the registry's checker. A
secret's value (``no_log`` in the spec, ``secret: true`` in the registry, the key maps) is never shown.
The registry and the specs are read once per process (``functools.cache``).
"""

from __future__ import annotations

import copy
import functools
import importlib
import os
import re

from ansible_collections.volta.serving.plugins.plugin_utils._defaults import ROLES, load_yaml, role_defaults
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import control_characters
from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import KINDS, NEEDS_WHY, WORD_RE, show

REGISTRY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "settings_checks")
# The roles an inventory configures (the internal ones, named with a leading _, take only their callers' input).
PUBLIC_ROLES = tuple(sorted(r for r in os.listdir(ROLES) if not r.startswith("_")
                            and os.path.isfile(os.path.join(ROLES, r, "meta", "argument_specs.yml"))))
# Secrets whose spec does not say no_log (maps that hold keys or tokens): their values are never shown.
SECRET_OPTIONS = frozenset(("api_gateway_keys", "volta_models"))
HOST_NAME_MAX = 253
# The variables whose shape the serving plan checks before it reads inside them (_shapes.shape_problems).
SHAPED = frozenset(("volta_server", "volta_instances", "api_gateway_keys", "volta_models"))
# The strings Ansible reads as booleans (ansible.module_utils.parsing.convert_bool).
BOOLEAN_TEXT = frozenset(("y", "yes", "on", "1", "true", "t", "n", "no", "off", "0", "false", "f"))
INT_RE = re.compile(r"[+-]?\d{1,18}")
FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
HIDDEN = '"(not shown: a secret)"'


class RegistryError(ValueError):
    """An entry of the registry that names no known check, or none without why."""


def message(host, name, why, fix):
    """``HOST: VARIABLE: why. Fix: fix.`` ({var} in the fix is the variable's name)."""
    fix = fix.replace("{var}", name)
    return f"{host}: {name}: {why.rstrip('. ')}. Fix: {fix.rstrip('. ')}."


def resolve(check):
    """The checker a registry entry names: a kind, or ``_module:function`` of plugins/plugin_utils."""
    if check in KINDS:
        return KINDS[check]
    module, function = [*str(check).split(":", 1), ""][:2]
    if not (module.startswith("_") and WORD_RE.fullmatch(module.lstrip("_")) and function.isidentifier()):
        raise RegistryError(f"{check!r} is neither a kind of _settings_kinds.KINDS nor _module:function")
    try:
        found = getattr(importlib.import_module(f"ansible_collections.volta.serving.plugins.plugin_utils.{module}"),
                        function)
    except (ImportError, AttributeError) as exc:
        raise RegistryError(f"{check!r} names no function of plugins/plugin_utils ({exc})") from exc
    if not callable(found):
        raise RegistryError(f"{check!r} is not a function")
    return found


@functools.cache
def role_options(role):
    """The options of the main entry point of *role*'s argument spec."""
    spec = load_yaml(os.path.join(ROLES, role, "meta", "argument_specs.yml")) or {}
    return ((spec.get("argument_specs") or {}).get("main") or {}).get("options") or {}


@functools.cache
def all_defaults():
    """Every public role's defaults, one mapping: what a host's template may name beside its own variables."""
    merged = {}
    for role in PUBLIC_ROLES:
        merged.update(role_defaults(role))
    return merged


@functools.cache
def role_entries(role):
    """The registry entries of *role* (``settings_checks/<role>.yml``), as written."""
    path = os.path.join(REGISTRY, f"{role}.yml")
    return (load_yaml(path) or {}) if os.path.isfile(path) else {}


def entry_problem(role, name, entry):
    """Why the registry entry of *name* in *role* is unusable, or None."""
    if not isinstance(entry, dict) or "check" not in entry:
        return f"{role}: {name}: no check"
    if entry["check"] == "todo":
        return f"{role}: {name}: check is todo"
    if entry["check"] in NEEDS_WHY and not str(entry.get("why") or "").strip():
        return f"{role}: {name}: check {entry['check']} needs a why"
    try:
        resolve(entry["check"])
    except RegistryError as exc:
        return f"{role}: {name}: {exc}"
    return None


@functools.cache
def registry():
    """Variable -> tuple of ``(role, option spec, checker or None, secret)``, every public role's.

    An entry still ``todo`` (or unusable: the registry test names those) checks the type only.
    """
    table = {}
    for role in PUBLIC_ROLES:
        entries = role_entries(role)
        for name, spec in role_options(role).items():
            entry = entries.get(name)
            checker = None if entry_problem(role, name, entry) else resolve(entry["check"])
            secret = bool(spec.get("no_log") or name in SECRET_OPTIONS or (entry or {}).get("secret"))
            table.setdefault(name, []).append((role, spec, checker, secret))
    return {name: tuple(rows) for name, rows in table.items()}


def host_name_problem(host):
    """The message for an inventory host name that is unsafe in a file name or a configuration, or None."""
    name = str(host)
    if WORD_RE.fullmatch(name) and ".." not in name and len(name) <= HOST_NAME_MAX:
        return None
    why = ("is not a safe host name (letters, digits, '.', '_' and '-', starting with a letter or digit, no '..', "
           f"at most {HOST_NAME_MAX} characters): the name reaches the router's nginx include lines and file names "
           "(its rotation files, the plan dumps), where spaces, ; { } # or quotes are read as configuration and .. "
           "leaves the directory")
    fix = "rename the host in the inventory (for example gpu-b) and set ansible_host to its address"
    return message(show(name) if control_characters(name) else name, "inventory host name",
                   f"{show(name)} {why}", fix)


def _describe(spec):
    """The option's description's first sentence, as a hint in a fix, without the doc markup."""
    text = spec.get("description") or ""
    text = " ".join(text) if isinstance(text, list) else str(text)
    text = re.sub(r"\b[CVOIM]\(([^)]*)\)", r"\1", text).split(". ")[0].strip().rstrip(".")
    return f" ({text[:1].lower()}{text[1:]})" if text else ""


def _example(spec, fallback):
    default = spec.get("default")
    return default if default not in (None, "", [], {}) and "{" not in str(default) else fallback


def _scalar_problem(value, kind, spec, secret):
    """(why, fix) when *value* is not of the scalar *kind* (int, float, bool, str, path), else None."""
    shown = HIDDEN if secret else show(value)
    hint = _describe(spec)
    if kind == "int":
        good = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and INT_RE.fullmatch(value))
        example = _example(spec, 1)
        return None if good else (f"{shown} is not a whole number",
                                  f"set {{var}} to a whole number{hint}, e.g. {example}")
    if kind == "float":
        good = (isinstance(value, (int, float)) and not isinstance(value, bool)) or (
            isinstance(value, str) and FLOAT_RE.fullmatch(value))
        return None if good else (f"{shown} is not a number", f"set {{var}} to a number{hint}")
    if kind == "bool":
        good = isinstance(value, bool) or value in (0, 1) or (
            isinstance(value, str) and value.lower() in BOOLEAN_TEXT)
        return None if good else (f"{shown} is not a boolean", f"set {{var}} to true or false{hint}")
    if value is None:
        return ("is empty (null: nothing is written after the colon)",
                f"set {{var}} to a value{hint}, or remove the line to keep the role's default")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return None
    what = "a boolean" if isinstance(value, bool) else "a list" if isinstance(value, list) else (
        "a mapping" if isinstance(value, dict) else f"a {type(value).__name__}")
    return f"{shown} is {what}, not text", f"set {{var}} to one text{hint} (quote it)"


def type_problem(value, spec, secret=False):
    """(why, fix) when *value* does not match the type of its argument-spec option *spec*, else None."""
    kind = spec.get("type", "str")
    shown = HIDDEN if secret else show(value)
    hint = _describe(spec)
    if kind == "raw":
        return None
    if kind == "list":
        if value is None:
            return "is empty (null: nothing is written after the colon)", "write {var} as a list, or [] for none"
        if not isinstance(value, list):
            what = "one text" if isinstance(value, str) else "a single value"
            return f"{shown} is {what}, not a list", f"write {{var}} as a YAML list{hint}, e.g. [{shown}]"
        elements = spec.get("elements")
        for index, entry in enumerate(value):
            problem = elements and type_problem(entry, {"type": elements}, secret)
            if problem:
                fix = problem[1].replace("{var}", "each entry of {var}")
                return f"entry {index + 1} of the list: {problem[0]}", fix
        return None
    if kind == "dict":
        if isinstance(value, dict):
            return None
        if value is None:
            return "is empty (null: nothing is written after the colon)", "write {var} as a mapping, or {} for none"
        return f"{shown} is not a mapping", f"write {{var}} as a YAML mapping (name: value){hint}"
    return _scalar_problem(value, kind, spec, secret)


def choices_problem(value, spec, secret=False):
    """(why, fix) when the option has choices and *value* is none of them, else None."""
    choices = spec.get("choices")
    if not choices or value in choices or str(value) in [str(c) for c in choices]:
        return None
    listed = ", ".join(str(c) for c in choices)
    return (f"{HIDDEN if secret else show(value)} is not one of {listed}", f"set {{var}} to one of {listed}")


def spec_problem(name, value, spec, secret=False):
    """The argument-spec validator's verdict on an option with suboptions (the nested fields), or None."""
    if "options" not in spec:
        return None
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # controller only

    option = {k: v for k, v in copy.deepcopy(spec).items() if k not in ("required", "default", "description")}
    errors = ArgumentSpecValidator({name: option}).validate({name: value}).error_messages
    if not errors:
        return None
    why = "a field does not match the role's argument spec" if secret else f"{'; '.join(errors)}"
    return why, "correct {var} as its role's meta/argument_specs.yml describes it"


def scrub(text, value):
    """*text* without any string held in *value* (a secret), in any form the checkers quote it."""
    leaves = []

    def walk(item):
        if isinstance(item, dict):
            for key in item:
                walk(item[key])
        elif isinstance(item, (list, tuple)):
            for entry in item:
                walk(entry)
        elif item not in (None, True, False) and str(item):
            leaves.append(str(item))

    walk(value)
    for leaf in sorted(leaves, key=len, reverse=True):
        for form in (show(leaf), repr(leaf), leaf, leaf[:60]):
            text = text.replace(form, HIDDEN)
    return text


def check_variable(host, name, value):
    """The messages of one variable the host sets (each role that reads it: type, then its checker).

    The variables whose shape preflight checks first (volta_server, volta_instances, api_gateway_keys,
    volta_models: plugin_utils/_shapes.py) are checked with its words, which say what each field must be.
    """
    if name in SHAPED:
        from ansible_collections.volta.serving.plugins.plugin_utils._shapes import shape_problems

        shaped = [line for line in shape_problems(host, {name: value})
                  if str(line).startswith((f"{host}: {name}:", f"{host}: {name}[", f"{host}: {name}."))]
        if shaped:
            secret = any(row[3] for row in registry().get(name, ()))
            line = scrub(str(shaped[0]), value) if secret else str(shaped[0])
            return [" ".join(line.split())]
    messages = []
    for _role, spec, checker, secret in registry().get(name, ()):
        problem = (type_problem(value, spec, secret) or choices_problem(value, spec, secret)
                   or spec_problem(name, value, spec, secret) or (checker(value) if checker else None))
        if isinstance(problem, str):
            problem = (problem, "see the option in its role's meta/argument_specs.yml")
        if problem:
            text = message(host, name, *problem)
            text = scrub(text, value) if secret else text
            if text not in messages:
                messages.append(text)
    return messages[:1]


def check_host(host, values):
    """Every problem of *host*: its name, and each of *values* (name -> templated value it sets)."""
    problems = [p for p in (host_name_problem(host),) if p]
    for name in sorted(values):
        problems.extend(check_variable(host, name, values[name]))
    return problems
