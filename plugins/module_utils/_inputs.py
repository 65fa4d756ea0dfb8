# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input hygiene of the serving plan: text that reaches a unit file, an nginx config or a rule.

Pure Python, no Ansible imports. Each function checks one thing and returns findings (see
``_rules.finding``); ``_plan.build_report`` calls them, so a bad value stops preflight before any
host is changed. Every pattern is a full match (``re.fullmatch``): ``$`` would let a trailing
newline through.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._rules import finding

CC_RE = re.compile(r"\d+\.\d+")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names that look like credentials: a value under such a name belongs in secret_env.
SECRET_NAME_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL")


def control_characters(text):
    """The control characters in *text* (C0, DEL, C1, line and paragraph separators), as reprs."""
    return sorted({repr(c) for c in str(text) if ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029"})


def check_compute_capability(host, server):
    """volta_server.compute_capability must read MAJOR.MINOR: every SM70 rule keys on it."""
    value = server.get("compute_capability")
    readable = isinstance(value, (str, float)) and CC_RE.fullmatch(str(value))
    if value is None or readable:
        return []
    return [
        finding(
            "invalid-value",
            host,
            None,
            "volta_server.compute_capability",
            f"compute_capability {value!r} is not MAJOR.MINOR.",
            "the V100 rules (driver branch, CUDA 13, bf16, FlashAttention) compare it as a version; an "
            "unreadable value would turn every one of them off.",
            'write it as a quoted string, "7.0" for a V100 (nvidia-smi --query-gpu=compute_cap).',
        )
    ]


def _text_problem(value):
    bad = control_characters(value)
    return f"contains the control character(s) {', '.join(bad)}" if bad else None


def _server_text(host, server):
    out = []
    for key, value in sorted(server.items(), key=lambda item: str(item[0])):
        checked = isinstance(value, str) and key != "compute_capability"  # that one has its own check
        problem = _text_problem(value) if checked else None
        if problem:
            out.append(_control_finding(host, None, f"volta_server.{key}", value, problem))
    return out


def _control_finding(host, label, field, value, problem):
    return finding(
        "invalid-value",
        host,
        label,
        field,
        f"{field} {value!r} {problem}.",
        "the value is written into unit files and the nginx configuration; a newline there starts a new "
        "directive (another unit line, a keyless server block).",
        f"remove the control characters from {field}.",
    )


def _instance_strings(raw):
    """``(field, value)`` for every free-text value of one raw instance that reaches a unit or config."""
    # name is checked by the normaliser (a full match of the unit-name pattern).
    for field in ("model", "served_model_name"):
        if isinstance(raw.get(field), str):
            yield field, raw[field]
    extra = raw.get("extra_args")
    if isinstance(extra, list):
        for index, arg in enumerate(extra):
            if isinstance(arg, str):
                yield f"extra_args[{index}]", arg
    env = raw.get("env")
    if isinstance(env, dict):
        for key, value in env.items():
            if isinstance(value, str):
                yield f"env[{key!r}]", value


def check_instance_text(host, label, raw):
    """Control characters in the free-text fields of one raw instance, and invalid env names."""
    out = []
    for field, value in _instance_strings(raw):
        problem = _text_problem(value)
        if problem:
            out.append(_control_finding(host, label, field, value, problem))
    out += check_env_names(host, label, "env", raw.get("env"))
    return out


def check_env_names(host, label, field, env):
    """Environment names must be shell/systemd names: ``[A-Za-z_][A-Za-z0-9_]*``."""
    if not isinstance(env, dict):
        return []
    return [
        finding(
            "invalid-value",
            host,
            label,
            field,
            f"{field} name {key!r} is not a valid environment variable name.",
            "systemd's Environment= takes NAME=value with NAME of letters, digits and '_' (not starting with "
            "a digit); anything else is refused when the unit loads, or changes what the line means.",
            f"rename it to match [A-Za-z_][A-Za-z0-9_]*, or remove it from {field}.",
        )
        for key in env
        if not (isinstance(key, str) and ENV_NAME_RE.fullmatch(key))
    ]


def check_server_inputs(host, server):
    """Every host-wide input check of volta_server."""
    return check_compute_capability(host, server) + _server_text(host, server)
