#!/usr/bin/env python3
"""Dump the option table of the REAL `vllm serve` parser as JSON (lab tooling).

Run this inside a THROWAWAY virtualenv (never in the repository) that holds the
real vLLM wheel installed with --no-deps plus its light requirements, as
described in tests/lab/pypi/README.md ("Re-deriving the flag data").  It imports vLLM, so it
is never run by `build`; its output, tests/lab/pypi/vllm-flags/<version>.json,
is committed as data (facts about the CLI, no vLLM code).

    python derive_vllm_flags.py OUT.json [--source "wheel file name + sha256"]
"""

import argparse
import json
import sys


def _force_cpu_platform():
    # Platform detection fails on a machine without a GPU ("Failed to infer
    # device type"); pretend this is a CPU build of vLLM before anything
    # imports vllm.platforms' resolved platform.
    from vllm import platforms

    real = platforms.vllm_version_matches_substr

    def matches(substr):
        return True if substr == "cpu" else real(substr)

    platforms.vllm_version_matches_substr = matches


def _type_name(action):
    t = action.type
    if t is None:
        return None
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None)
    if name is None:
        name = type(t).__name__
    return name


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def _choices(action):
    if action.choices is None:
        return None
    return [_jsonable(c) if isinstance(c, (str, int, float, bool)) else str(c)
            for c in action.choices]


def _probe_error_format(parser):
    """Capture how the real parser words errors (for the simulator)."""
    out = {}
    for key, argv in {
        "unrecognized": ["serve", "m", "--volta-lab-bogus"],
        "invalid_choice": ["serve", "m", "--dtype", "bfloat17"],
        "expected_one": ["serve", "m", "--port"],
        "invalid_int": ["serve", "m", "--max-num-seqs", "abc"],
    }.items():
        import contextlib
        import io

        buf = io.StringIO()
        with contextlib.redirect_stderr(buf):
            try:
                parser.parse_args(argv)
                out[key] = {"exit": 0, "stderr": ""}
            except SystemExit as exc:
                out[key] = {"exit": exc.code, "stderr": buf.getvalue()[-600:]}
            except Exception as exc:
                out[key] = {"exit": None, "stderr": f"{type(exc).__name__}: {exc}"}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--source", default="")
    ns = ap.parse_args()

    _force_cpu_platform()
    # Build the top-level parser the way vllm.entrypoints.cli.main does, so
    # that the error wording (which parser reports what) is the real one.
    import importlib

    import vllm
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    top = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    top.add_argument("-v", "--version", action="version",
                     version=vllm.__version__)
    subparsers = top.add_subparsers(required=False, dest="subparser")
    serve = None
    subcommands = []
    for modname in ("vllm.entrypoints.cli.openai", "vllm.entrypoints.cli.serve",
                    "vllm.entrypoints.cli.launch",
                    "vllm.entrypoints.cli.benchmark.main",
                    "vllm.entrypoints.cli.collect_env",
                    "vllm.entrypoints.cli.run_batch"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        for cmd in mod.cmd_init():
            sub = cmd.subparser_init(subparsers)
            subcommands.append(cmd.name)
            if cmd.name == "serve":
                serve = sub
    if serve is None:
        serve = ServeSubcommand().subparser_init(subparsers)

    options = {}
    positionals = []
    for action in serve._actions:
        if not action.option_strings:
            positionals.append({
                "dest": action.dest,
                "nargs": action.nargs,
                "choices": _choices(action),
            })
            continue
        nargs = action.nargs
        if nargs is None and action.__class__.__name__ in (
                "_StoreTrueAction", "_StoreFalseAction", "_StoreConstAction",
                "_HelpAction", "_VersionAction", "_CountAction",
                "_AppendConstAction", "BooleanOptionalAction"):
            nargs = 0
        for opt in action.option_strings:
            options[opt] = {
                "dest": action.dest,
                "takes_value": nargs != 0,
                "nargs": nargs,
                "choices": _choices(action),
                "type": _type_name(action),
                "aliases": [o for o in action.option_strings if o != opt],
                "option_strings": list(action.option_strings),
                "deprecated": bool(getattr(action, "deprecated", False)),
            }

    backends = None
    for modpath in ("vllm.v1.attention.backends.registry",
                    "vllm.attention.backends.registry"):
        try:
            mod = __import__(modpath, fromlist=["AttentionBackendEnum"])
            backends = [m.name for m in mod.AttentionBackendEnum]
            break
        except Exception:  # noqa: S112  an older layout: try the next module path
            continue

    data = {
        "vllm_version": vllm.__version__,
        "source": ns.source,
        "derived_with": ("derive_vllm_flags.py: vllm.entrypoints.cli.serve."
                         "ServeSubcommand().subparser_init() on a forced CPU "
                         f"platform, Python {sys.version.split()[0]}"),
        "prog": serve.prog,
        "usage": serve.usage,
        "top_usage": top.format_usage().strip(),
        "subcommands": subcommands,
        "allow_abbrev": serve.allow_abbrev,
        "option_count": len(options),
        "action_count": sum(1 for a in serve._actions if a.option_strings),
        "positionals": positionals,
        "attention_backends": backends,
        "error_format": _probe_error_format(top),
        "options": dict(sorted(options.items())),
    }
    with open(ns.out, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=False)
        fh.write("\n")
    print(f"{ns.out}: {len(options)} option strings, "
          f"{data['action_count']} actions, vllm {vllm.__version__}")


if __name__ == "__main__":
    main()
