# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""extra_args flags read the way the pinned ``vllm serve`` parser reads them.

Pure Python, no Ansible imports. vLLM's parser turns ``_`` into ``-`` in option names and accepts
a unique prefix of an option (argparse ``allow_abbrev``), so ``--api_key``, ``--api-ke`` and
``--hos`` are ``--api-key`` and ``--host``. ``resolve_args`` rewrites every flag of extra_args to
the full option it stands for (against the recorded list of ``_vllm_flags``), so that every rule
that looks for a flag sees it, and the rendered argv says plainly what vLLM runs with. What the
parser would refuse (an unknown option, an ambiguous prefix) is reported.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import VLLM_ENGINES, has_flag
from ansible_collections.volta.serving.plugins.plugin_utils._vllm_flags import RECORDED_VERSION, SERVE_FLAGS

_NEGATIVE_NUMBER = re.compile(r"-\d+|-\d*\.\d+")
# -O3 / -O=3 is vLLM's shorthand for --optimization-level (its parser rewrites it before argparse).
_OPTIMIZATION_SHORTHAND = "--optimization-level"


def _split(arg):
    """``(name, rest)``: the option name as vLLM normalises it, and what follows (``.key``, ``=value``)."""
    head, eq, value = arg.partition("=")
    name, dot, sub = head.partition(".")
    if name.startswith("--"):
        name = "--" + name[2:].replace("_", "-")
    return name, dot + sub + eq + value


def candidates(name, flags=SERVE_FLAGS):
    """The options *name* can stand for: itself when exact, else every option it is a prefix of.

    A single-dash name also matches a two-character option followed by its value (``-q4``).
    """
    if name in flags:
        return [name]
    found = [flag for flag in flags if flag.startswith(name)]
    if not name.startswith("--") and len(name) > 2 and name[:2] in flags:
        found.append(name[:2])
    return sorted(set(found))


def resolve_flag(arg, flags=SERVE_FLAGS):
    """``(token, canonical, problem)`` for one extra_args word.

    *token* is the word to render (the full option when it was abbreviated or spelt with ``_``),
    *canonical* the option it stands for (None for a value), *problem* ``None``, ``"unknown"`` or
    ``("ambiguous", [options])``.
    """
    if not arg.startswith("-") or arg == "-":
        return arg, None, None
    if arg.startswith("-O") and not arg.startswith("--"):
        return arg, _OPTIMIZATION_SHORTHAND, None
    name, rest = _split(arg)
    found = candidates(name, flags)
    if len(found) == 1:
        canonical = found[0]
        keep = not name.startswith("--") and canonical != name and len(canonical) == 2
        return (arg if keep else canonical + rest), canonical, None
    if found:
        return arg, None, ("ambiguous", found)
    if _NEGATIVE_NUMBER.fullmatch(arg) or " " in arg:
        return arg, None, None
    return arg, None, "unknown"


def resolve_args(args, flags=SERVE_FLAGS):
    """``(tokens, problems)``: *args* with every flag written out in full; the words vLLM would refuse.

    *problems* holds ``{"arg", "problem", "options"}`` per refused word. Words after ``--`` are values.
    """
    tokens, problems = [], []
    for index, arg in enumerate(args):
        if arg == "--":
            tokens += args[index:]
            break
        token, _canonical, problem = resolve_flag(arg, flags)
        tokens.append(token)
        if problem == "unknown":
            problems.append({"arg": arg, "problem": "unknown", "options": []})
        elif problem:
            problems.append({"arg": arg, "problem": "ambiguous", "options": problem[1]})
    return tokens, problems


def _flag_finding(inst, ctx, problem, recorded):
    arg = problem["arg"]
    if problem["problem"] == "ambiguous":
        return finding(
            "unknown-flag",
            ctx["host"],
            inst["name"],
            "extra_args",
            f"{arg} is an ambiguous abbreviation of {', '.join(problem['options'])}.",
            "vLLM's parser accepts a unique prefix of an option and refuses one that fits several.",
            "write the option out in full.",
        )
    text = f"{arg} is not an option of vllm serve {RECORDED_VERSION} (nor a unique prefix of one)."
    why = "vLLM refuses it at start ('unrecognized arguments'), after the hosts were changed."
    if not recorded:
        return finding(
            "flag-not-recorded",
            ctx["host"],
            inst["name"],
            "extra_args",
            text,
            f"the recorded flag list is vLLM {RECORDED_VERSION}'s; this engine may know it.",
            f"check the spelling against `vllm serve --help` of the {inst['engine']} release.",
        )
    return finding(
        "unknown-flag",
        ctx["host"],
        inst["name"],
        "extra_args",
        text,
        why,
        "check the spelling against `vllm serve --help`; options are written in full.",
    )


def check_flags(inst, ctx):
    """Findings for the extra_args words the pinned vLLM parser would refuse, and for --config."""
    if inst["engine"] not in VLLM_ENGINES:
        return []
    pinned = (ctx.get("engine_versions") or {}).get(inst["engine"], {}).get("version")
    recorded = inst["engine"] == "vllm" and str(pinned) == RECORDED_VERSION
    out = [_flag_finding(inst, ctx, problem, recorded) for problem in inst.get("flag_problems") or []]
    if has_flag(inst["extra_args"] or [], ("--config",)):
        out.append(
            finding(
                "config-file-flag",
                ctx["host"],
                inst["name"],
                "extra_args",
                "--config reads more options from a YAML file.",
                "options in a file bypass every check of extra_args (the key, the bind address, managed flags).",
                "put the options in extra_args (or the fields) instead of a config file.",
            )
        )
    return out
