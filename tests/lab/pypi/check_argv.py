#!/usr/bin/env python3
"""Validate vLLM command lines against a flag-data file (volta.serving test lab).

The flag data (tests/lab/pypi/vllm-flags/<version>.json) was derived from the
REAL `vllm serve` parser.  This module re-implements, in a few lines, the part
of argparse + vLLM's FlexibleArgumentParser that decides whether an argv is
accepted (underscores in long names, `--opt=value`, dotted JSON keys
`--opt.key value`, `-O3`, nargs, choices, int/float types), so that rendered
command lines can be checked without vLLM installed.  The vLLM stand-in wheel
ships a copy of this file as `vllm/_volta_lab/argv.py`.

Usage:
    check_argv.py --flags vllm-flags/0.21.0.json PLAN.json
    check_argv.py --flags vllm-flags/0.21.0.json -- vllm serve MODEL --dtype half

PLAN.json: a list of argv lists, or {"commands": [{"name": ..., "argv": [...],
"flags": "<file, or version looked up in vllm-flags/>"}]}.  An argv may start
with `vllm serve`, `python -m vllm.entrypoints.openai.api_server`, or be just
the serve options.  Exit 0 when all are accepted, 1 otherwise (each rejected
command is printed with the parser's message, naming the offending flag),
2 on a usage problem.
"""

import json
import os
import re
import sys

FLAG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vllm-flags")
INT_TYPES = {"int", "human_readable_int", "check_port"}
FLOAT_TYPES = {"float"}


class ArgvError(Exception):
    """Rejected argv.  `prog` is the parser that reports it (argparse's way)."""

    def __init__(self, message, prog, usage, flag=None):
        super().__init__(message)
        self.message = message
        self.prog = prog
        self.usage = usage
        self.flag = flag

    def render(self):
        return f"{self.usage}\n{self.prog}: error: {self.message}"


def load_flags(path_or_version):
    path = path_or_version
    if not os.path.exists(path):
        path = os.path.join(FLAG_DIR, f"{path_or_version}.json")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _looks_like_option(tok, options):
    if not tok.startswith("-") or tok == "-":
        return False
    if re.fullmatch(r"-\d+(\.\d*)?|-\.\d+", tok) and not any(
            o[1:].isdigit() for o in options if not o.startswith("--")):
        return False  # negative number
    return True


def _normalise(tok):
    """FlexibleArgumentParser: `--a_b.c_d=v` -> `--a-b.c_d=v`; -O3 -> level."""
    if tok.startswith("--"):
        key, eq, val = tok.partition("=")
        head, dot, rest = key[2:].partition(".")
        return [f"--{head.replace('_', '-')}{dot}{rest}{eq}{val}"]
    if tok.startswith("-O") and tok != "-O":
        return ["--optimization-level", tok[3:] if tok[2:3] == "=" else tok[2:]]
    return [tok]


def _convert(spec, opt, value):
    tname = spec.get("type") or ""
    if tname in INT_TYPES:
        try:
            int(value)
        except ValueError:
            raise ValueError(f"argument {opt}: invalid int value: {value!r}") from None
    elif tname in FLOAT_TYPES:
        try:
            float(value)
        except ValueError:
            raise ValueError(f"argument {opt}: invalid float value: {value!r}") from None
    choices = spec.get("choices")
    if choices is not None and value not in [str(c) for c in choices]:
        shown = ", ".join(repr(c) for c in choices)
        raise ValueError(f"argument {opt}: invalid choice: {value!r} (choose from {shown})")


def parse(argv, flags, mode="serve"):
    """Parse serve options `argv` (without `vllm serve`).

    mode "serve": positional model_tag allowed, errors as `vllm` / `vllm serve`;
    mode "api_server": no positional (python -m ...openai.api_server).
    Returns {dest: value}.  Raises ArgvError.
    """
    options = flags["options"]
    if mode == "serve":
        sub_prog, sub_usage = flags.get("prog", "vllm serve"), "usage: " + flags.get(
            "usage", "vllm serve [model_tag] [options]")
        top_prog, top_usage = "vllm", flags.get("top_usage", "usage: vllm [-h] [-v] {serve} ...")
    else:
        sub_prog, sub_usage = "api_server.py", "usage: api_server.py [options]"
        top_prog, top_usage = sub_prog, sub_usage

    def fail(msg, flag=None, top=False):
        if top:
            raise ArgvError(msg, top_prog, top_usage, flag)
        raise ArgvError(msg, sub_prog, sub_usage, flag)

    toks = []
    for tok in argv:
        toks.extend(_normalise(tok))
    # `--model X` is moved to the positional slot by vLLM for `vllm serve`.
    result, extras, positional_free = {}, [], mode == "serve"
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok == "--":
            rest = toks[i:]
            if rest and positional_free:
                result["model_tag"] = rest.pop(0)
                positional_free = False
            extras.extend(rest)
            break
        if not _looks_like_option(tok, options):
            if positional_free:
                result["model_tag"] = tok
                positional_free = False
            else:
                extras.append(tok)
            continue
        name, eq, explicit = tok.partition("=")
        if not eq:
            explicit = None
        spec = options.get(name)
        if spec is None and "." in name and name.startswith("-"):
            base = name.split(".", 1)[0]
            bspec = options.get(base)
            if bspec is not None and bspec.get("takes_value"):
                # dotted JSON key: the value becomes part of a JSON object
                if explicit is None:
                    if i >= len(toks):
                        fail(f"argument {base}: expected one argument", base)
                    i += 1
                result.setdefault(bspec["dest"], {})
                continue
        if spec is None and not name.startswith("--"):
            # single-dash option with the value attached, e.g. -tp4
            for opt in sorted(options, key=len, reverse=True):
                if len(opt) == 2 and name.startswith(opt) and explicit is None:
                    spec, explicit, name = options[opt], name[len(opt):], opt
                    break
        if spec is None and flags.get("allow_abbrev") and name.startswith("--"):
            hits = sorted({o for o in options if o.startswith(name)})
            if len(hits) > 1:
                fail(f"ambiguous option: {name} could match {', '.join(hits)}", name)
            if len(hits) == 1:
                spec, name = options[hits[0]], hits[0]
        if spec is None:
            extras.append(tok)
            # argparse keeps following non-option tokens as extras as well
            while i < len(toks) and not _looks_like_option(toks[i], options):
                if positional_free:
                    break
                extras.append(toks[i])
                i += 1
            continue
        nargs = spec.get("nargs")
        name = "/".join(spec.get("option_strings") or [name])
        if spec["dest"] == "help":
            result["help"] = True
            continue
        if nargs == 0:
            if explicit is not None:
                fail(f"argument {name}: ignored explicit argument {explicit!r}", name)
            result[spec["dest"]] = not tok.startswith("--no-")
            continue
        values = []
        if explicit is not None:
            values = [explicit]
        elif nargs in (None, "?") or isinstance(nargs, int):
            want = 1 if nargs in (None, "?") else nargs
            while len(values) < want and i < len(toks) and not _looks_like_option(toks[i], options):
                values.append(toks[i])
                i += 1
            if len(values) < want and nargs != "?":
                what = "one argument" if want == 1 else f"{want} arguments"
                fail(f"argument {name}: expected {what}", name)
        else:  # '*' or '+'
            while i < len(toks) and not _looks_like_option(toks[i], options):
                values.append(toks[i])
                i += 1
            if nargs == "+" and not values:
                fail(f"argument {name}: expected at least one argument", name)
        for value in values:
            try:
                _convert(spec, name, value)
            except ValueError as exc:
                fail(str(exc), name)
        result[spec["dest"]] = values if nargs in ("*", "+") or isinstance(nargs, int) \
            else (values[0] if values else None)
    if extras:
        first = next((e for e in extras if e.startswith("-")), extras[0])
        fail("unrecognized arguments: " + " ".join(extras), first, top=True)
    return result


def split_command(argv):
    """-> (mode, serve options) for `vllm serve ...`, `python -m ...api_server ...`."""
    argv = list(argv)
    if len(argv) >= 2 and os.path.basename(argv[0]) == "vllm" and argv[1] == "serve":
        return "serve", argv[2:]
    if argv and argv[0] == "serve":
        return "serve", argv[1:]
    if "-m" in argv:
        idx = argv.index("-m")
        if idx + 1 < len(argv) and argv[idx + 1] == "vllm.entrypoints.openai.api_server":
            return "api_server", argv[idx + 2:]
    return "serve", argv


def check(argv, flags):
    """None when accepted, else the argparse-style message (str)."""
    mode, rest = split_command(argv)
    try:
        parse(rest, flags, mode)
    except ArgvError as exc:
        return exc.render()
    return None


def main(args=None):
    args = list(sys.argv[1:] if args is None else args)
    if len(args) < 3 or args[0] != "--flags":
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    default_flags = args[1]
    try:
        flags_cache = {default_flags: load_flags(default_flags)}
    except (OSError, ValueError) as exc:
        print(f"check_argv: cannot read flag data {default_flags}: {exc}", file=sys.stderr)
        return 2
    if args[2] == "--":
        commands = [{"name": "argv", "argv": args[3:]}]
    else:
        try:
            with open(args[2], encoding="utf-8") as fh:
                plan = json.load(fh)
        except (OSError, ValueError) as exc:
            print(f"check_argv: cannot read plan {args[2]}: {exc}", file=sys.stderr)
            return 2
        if isinstance(plan, dict):
            plan = plan.get("commands", [])
        commands = [c if isinstance(c, dict) else {"argv": c} for c in plan]
    bad = 0
    for n, cmd in enumerate(commands, 1):
        name = cmd.get("name", f"#{n}")
        fkey = cmd.get("flags", default_flags)
        if fkey not in flags_cache:
            flags_cache[fkey] = load_flags(fkey)
        msg = check([str(a) for a in cmd["argv"]], flags_cache[fkey])
        if msg is None:
            print(f"ok: {name}")
        else:
            bad += 1
            print(f"REJECTED: {name}: {msg.splitlines()[-1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
