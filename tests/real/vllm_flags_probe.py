"""Run inside the cached real-vLLM venv (``vllm_venv.python``): the option strings of ``vllm serve``.

Builds the top ``vllm`` parser with the ``serve`` subcommand as ``vllm.entrypoints.cli.main`` does
and prints one JSON object on the line starting with MARKER: ``allow_abbrev`` of the serve parser
``flags``, every option string it accepts (sorted), ``dests`` (option string -> the argument it
sets), and ``cases``: for each word list read as JSON on stdin (``{"cases": [[words after the
model], ...]}``), ``"parse-error"`` or the sorted names of the arguments the words changed, so the
test sees how the real parser reads ``_`` spellings and abbreviations, not only the list.

The caller prepends ``vllm_venv.CPU_PLATFORM_PRELUDE`` (vLLM must pick a platform at import).
"""

import contextlib
import io
import json
import sys

from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser

MARKER = "VOLTA-FLAGS-RESULT "


def _serve_parser():
    top = FlexibleArgumentParser(prog="vllm")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    ServeSubcommand().subparser_init(subparsers)
    return top, subparsers.choices["serve"]


def _parse(top, words):
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(top.parse_args(["serve", "m", *words]))
        except SystemExit:
            return None


def _changed(top, base, words):
    parsed = _parse(top, words)
    if parsed is None:
        return "parse-error"
    return sorted(key for key, value in parsed.items() if base.get(key) != value)


def main():
    top, serve = _serve_parser()
    flags = sorted({s for action in serve._actions for s in action.option_strings})
    base = _parse(top, [])
    cases = json.load(sys.stdin)["cases"]
    out = {
        "allow_abbrev": serve.allow_abbrev,
        "flags": flags,
        "dests": {s: action.dest for action in serve._actions for s in action.option_strings},
        "cases": [_changed(top, base, words) for words in cases],
    }
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")


main()
