# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kinds of the settings registry: one checker per kind of value a role writes somewhere.

Pure Python, no Ansible imports. ``KINDS`` maps a kind's name (the ``check:`` of an entry of
``settings_checks/<role>.yml``) to a checker ``fn(value) -> None | (why, fix)``: ``None`` when the value
is fine, else why it is refused (it may quote the value with ``show``; the settings action never shows a
secret's) and the fix. ``{var}`` in the fix is replaced by the variable's name, so one checker serves
every variable of its kind. The settings action composes ``HOST: VARIABLE: why. Fix: fix.``

Every pattern is a full match (``re.fullmatch``): ``$`` would let a trailing newline through. Each kind
``K`` that refuses "" also has ``K_or_empty``, which takes "" (for the variables where "" means "none" or
"the default") and otherwise checks as ``K``.
"""

from __future__ import annotations

import ipaddress
import json
import re

from ansible_collections.volta.serving.plugins.plugin_utils._cidr import check_cidr
from ansible_collections.volta.serving.plugins.plugin_utils._gateway import RATE_RE, SECONDS_RE, SIZE_RE
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import control_characters

# What nginx, systemd and a shell read as syntax; no value of an address, name or number may hold one.
SYNTAX = ";{}#\"'`$\\"
HOST_LABEL_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# POSIX portable user and group names (useradd's default NAME_REGEX, without the trailing $ of machines).
ACCOUNT_RE = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
# A package version or release pin: 0.10.1.1, 12.8.1-1, 2.7.1+cu126, 1:580.95.05-0ubuntu1, b4567, v0.4.
VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~:_-]{0,127}")
SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")
_ARCH = r"\d{2,3}[a-z]?(?:-real|-virtual)?"
CUDA_ARCHS_RE = re.compile(rf"native|all|all-major|{_ARCH}(?:;{_ARCH})*")
PORT_MAX = 65535
SHOW_MAX = 60


def show(value):
    """*value* as the refusal quotes it: JSON (newlines escaped, so a message stays one line), shortened."""
    text = value
    if isinstance(text, str) and len(text) > SHOW_MAX:
        text = text[:SHOW_MAX] + "..."
    try:
        return json.dumps(text, ensure_ascii=False, default=str)
    except (TypeError, ValueError):  # pragma: no cover - default=str makes every value dumpable
        return repr(text)


def _type_name(value):
    if value is None:
        return "empty (null: nothing after the colon)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _text_problem(value, what, fix, reads="which nginx, systemd or a shell would read as syntax"):
    """(why, fix) when *value* is no string, or holds a control character, a space or a syntax character."""
    if not isinstance(value, str):
        return f"{show(value)} is {_type_name(value)}, not {what} written as text", fix
    if control_characters(value):
        return (f"{show(value)} contains the control character(s) {', '.join(control_characters(value))}, so it "
                "would end the line it is written on and start a new one"), fix
    bad = sorted({c for c in value if c in SYNTAX or c.isspace()})
    if bad:
        return f"{show(value)} is not {what}: it contains {' '.join(repr(c) for c in bad)}, {reads}", fix
    return None


def check_none(_value):
    """Kind ``none``: never written anywhere (the entry says why)."""
    return None


def check_type(_value):
    """Kind ``type``: a whole number, boolean or float, checked by the settings action against the spec."""
    return None


def is_host_name(text):
    """True for a DNS host name: dot-separated labels of letters, digits and inner hyphens, at most 253."""
    return (isinstance(text, str) and 0 < len(text) <= 253
            and all(HOST_LABEL_RE.fullmatch(label) for label in text.split(".")))


def check_address(value):
    """Kind ``address``: an IPv4 or IPv6 literal (no zone id, no brackets, no port) or a DNS host name."""
    fix = "set {var} to an address such as 10.0.0.5 or 2001:db8::5, or to a host name such as gpu1.example.com"
    problem = _text_problem(value, "an IPv4 or IPv6 address or a host name", fix,
                            "so nginx would read it as configuration")
    if problem:
        return problem
    if "%" in value:
        return (f"{show(value)} carries a zone id (%...), which nginx refuses in a listen or proxy address",
                "set {var} to the address without %zone, or to a global address of that interface")
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if ":" not in value and not value.replace(".", "").isdigit() and is_host_name(value):
        return None
    return (f"{show(value)} is not an IPv4 or IPv6 address or a host name (a port, brackets or a network do not "
            "belong here)", fix)


def check_cidr_value(value):
    """Kind ``cidr``: a network (10.0.0.0/8) or one address, strict: host bits are refused."""
    fix = "set {var} to a network such as 10.0.0.0/8, or to one address such as 10.0.0.5"
    problem = _text_problem(value, "a network", fix)
    if problem:
        return problem
    refused = check_cidr(value)[1]
    if not refused:
        return None
    if "host bits" in refused["why"]:
        wide = ipaddress.ip_network(value.strip(), strict=False)
        return (f"{show(value)} has host bits set: it would be widened to {wide.with_prefixlen} "
                f"({wide.num_addresses} addresses), which may not be what is meant"), refused["fix"]
    return refused["why"].replace(repr(value.strip()), show(value)), refused["fix"]


def _list_problem(value, what, example):
    if isinstance(value, (list, tuple)):
        return None
    fix = f"write {{var}} as a YAML list, for example {example} (or [] for none)"
    if isinstance(value, str):
        return f"{show(value)} is one text, not a list of {what}", fix
    return f"{show(value)} is {_type_name(value)}, not a list of {what}", fix


def _each(value, check, what, example):
    """Check every entry of a list with *check*; the first refused entry is named with its position."""
    problem = _list_problem(value, what, example)
    if problem:
        return problem
    for index, entry in enumerate(value):
        refused = check(entry)
        if refused:
            return f"entry {index + 1} of the list: {refused[0]}", refused[1]
    return None


def check_cidr_list(value):
    """Kind ``cidr_list``: a list of networks, each strict."""
    return _each(value, check_cidr_value, "networks", '["10.0.0.0/8", "2001:db8::/32"]')


def check_address_list(value):
    """Kind ``address_list``: a list of addresses or host names."""
    return _each(value, check_address, "addresses", '["10.0.0.5"]')


def check_port(value):
    """Kind ``port``: a TCP port, 1-65535, as a number (or text of digits only)."""
    fix = "set {var} to a TCP port number between 1 and 65535, for example 8000"
    number = value
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int):
        return f"{show(value)} is not a whole number", fix
    if not 1 <= number <= PORT_MAX:
        return f"{show(value)} is not a TCP port (1-65535)", fix
    return None


def check_port_list(value):
    """Kind ``port_list``: a list of TCP ports; a bare number where the list belongs is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (f"{show(value)} is a single number, not a list of ports; it would not be read as one",
                f"write {{var}} as a list: [{value}]")
    return _each(value, check_port, "ports", "[8000, 8001]")


def _nginx(value, pattern, what, fix, numbers=False):
    if numbers and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if isinstance(value, str) and pattern.fullmatch(value):
        return None
    problem = _text_problem(value, what, fix)
    if problem:
        return problem
    return f"{show(value)} is not {what}, so nginx would refuse it or read it as configuration", fix


def check_nginx_size(value):
    """Kind ``nginx_size``: bytes with an optional k, m or g (client_max_body_size)."""
    return _nginx(value, SIZE_RE, "an nginx size", "set {var} to a number with an optional unit k, m or g, e.g. 64m",
                  numbers=True)


def check_nginx_seconds(value):
    """Kind ``nginx_seconds``: a whole number of seconds, 1 or more, without a unit (5, not 5s)."""
    return _nginx(value, SECONDS_RE, "a whole number of seconds (without a unit)",
                  "set {var} to a whole number of seconds such as 60 (no unit: 5, not 5s)", numbers=True)


def check_nginx_rate(value):
    """Kind ``nginx_rate``: a limit_req rate, <n>r/s or <n>r/m."""
    return _nginx(value, RATE_RE, "an nginx rate", "set {var} to requests per second or minute, e.g. 10r/s or 30r/m")


def check_abs_path(value):
    """Kind ``abs_path``: an absolute path without spaces or syntax characters (the operator's own choice)."""
    fix = "set {var} to an absolute path such as /srv/volta, without spaces or quotes"
    problem = _text_problem(value, "a path", fix)
    if problem:
        return problem
    if not value.startswith("/"):
        return f"{show(value)} is not an absolute path (it must start with /)", fix
    return None


def check_abs_path_list(value):
    """Kind ``abs_path_list``: a list of absolute paths."""
    return _each(value, check_abs_path, "paths", '["/srv/data"]')


def check_account(value):
    """Kind ``account``: a POSIX user or group name."""
    fix = "set {var} to a user or group name of lowercase letters, digits, _ and - (e.g. volta), at most 32"
    problem = _text_problem(value, "an account name", fix)
    if problem:
        return problem
    if not ACCOUNT_RE.fullmatch(value):
        return f"{show(value)} is not a user or group name", fix
    return None


def check_account_list(value):
    """Kind ``account_list``: a list of user or group names."""
    return _each(value, check_account, "account names", '["video", "render"]')


def check_word(value):
    """Kind ``word``: a safe identifier, letters, digits, . _ and - (not first)."""
    fix = "set {var} to letters, digits, '.', '_' and '-' only (starting with a letter or digit)"
    problem = _text_problem(value, "a name", fix)
    if problem:
        return problem
    if not WORD_RE.fullmatch(value) or ".." in value:
        return f"{show(value)} is not a plain name (letters, digits, . _ -, no ..)", fix
    return None


def check_word_list(value):
    """Kind ``word_list``: a list of safe identifiers."""
    return _each(value, check_word, "names", '["torchvision"]')


def check_url(value):
    """Kind ``url``: an http or https URL with a host, without whitespace, quotes or control characters."""
    fix = "set {var} to an http:// or https:// URL such as https://pypi.org/simple, without spaces or quotes"
    if isinstance(value, str) and not control_characters(value):
        bad = sorted({c for c in value if c.isspace() or c in "\"'`{}\\<>;"})
        if bad:
            return (f"{show(value)} is not a URL: it contains {' '.join(repr(c) for c in bad)}, which would be read "
                    "as syntax where it is written"), fix
    else:
        return _text_problem(value, "a URL", fix)
    match = re.fullmatch(r"(https?)://([^/?#@]+@)?([^/?#]+)(.*)", value)
    if not match:
        return f"{show(value)} is not an http:// or https:// URL", fix
    return None


def check_version_pin(value):
    """Kind ``version_pin``: a release or package version (letters, digits, . + ~ : _ -)."""
    fix = "set {var} to a version such as 0.10.1 or 12.8.1-1"
    problem = _text_problem(value if not isinstance(value, (int, float)) or isinstance(value, bool) else str(value),
                            "a version", fix)
    if problem:
        return problem
    if not VERSION_RE.fullmatch(str(value)):
        return f"{show(value)} is not a version (letters, digits, . + ~ : _ - only)", fix
    return None


def check_sha256(value):
    """Kind ``sha256``: 64 hex digits."""
    fix = "set {var} to the file's sha256 (64 hex digits, sha256sum FILE)"
    if isinstance(value, str) and SHA256_RE.fullmatch(value):
        return None
    problem = _text_problem(value, "a sha256", fix)
    return problem or (f"{show(value)} is not a sha256 (64 hex digits)", fix)


def check_free_text(value):
    """Kind ``free_text``: any one-line text (only where the value is quoted safely; the entry says why)."""
    if not isinstance(value, str):
        return f"{show(value)} is {_type_name(value)}, not text", "set {var} to one line of text"
    if control_characters(value):
        return (f"{show(value)} contains the control character(s) {', '.join(control_characters(value))}",
                "set {var} to one line of text without control characters")
    return None


def check_command(value):
    """Kind ``command``: a program, by name (nvidia-smi) or by absolute path."""
    if isinstance(value, str) and value.startswith("/"):
        return check_abs_path(value)
    refused = check_word(value)
    if refused:
        return refused[0], "set {var} to a program name such as nvidia-smi, or to its absolute path"
    return None


def check_url_or_abs_path(value):
    """Kind ``url_or_abs_path``: an http(s) URL, or an absolute path on the host."""
    if isinstance(value, str) and value.startswith("/"):
        return check_abs_path(value)
    return check_url(value)


def check_rel_path(value):
    """Kind ``rel_path``: a relative path inside a directory (no leading /, no .. component)."""
    fix = "set {var} to a relative path inside the directory, such as llama.cpp/src, without spaces or quotes"
    problem = _text_problem(value, "a path", fix)
    if problem:
        return problem
    if value.startswith("/") or ".." in value.split("/"):
        return f"{show(value)} is not a path inside the directory (it starts with / or has a .. component)", fix
    return None


def check_argv(value):
    """Kind ``argv``: a list of command arguments, passed as argv (never through a shell), one line each."""
    problem = _list_problem(value, "arguments", '["-DGGML_NATIVE=OFF"]')
    if problem:
        return problem
    for index, entry in enumerate(value):
        if not isinstance(entry, (str, int, float)) or isinstance(entry, bool) or control_characters(entry):
            return (f"entry {index + 1} of the list: {show(entry)} is not one line of text",
                    "write each argument of {var} as one line of text")
    return None


def check_cuda_architectures(value):
    """Kind ``cuda_architectures``: CMAKE_CUDA_ARCHITECTURES, numbers (70, 70-real) split by ; or native/all."""
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(text, str) and CUDA_ARCHS_RE.fullmatch(text):
        return None
    fix = 'set {var} to architectures such as "70" or "70;75" (or native, all, all-major)'
    return _text_problem(text, "a list of CUDA architectures", fix, "which would reach the build's command line "
                         "and its cache key") or (f"{show(value)} is not a list of CUDA architectures", fix)


def _or_empty(check):
    def checker(value):
        return None if value == "" else check(value)

    checker.__doc__ = f"Like {check.__name__}, and takes \"\" (none, or the role's choice)."
    return checker


KINDS = {
    "type": check_type,
    "none": check_none,
    "address": check_address,
    "address_list": check_address_list,
    "cidr": check_cidr_value,
    "cidr_list": check_cidr_list,
    "port": check_port,
    "port_list": check_port_list,
    "nginx_size": check_nginx_size,
    "nginx_seconds": check_nginx_seconds,
    "nginx_rate": check_nginx_rate,
    "abs_path": check_abs_path,
    "abs_path_list": check_abs_path_list,
    "account": check_account,
    "account_list": check_account_list,
    "word": check_word,
    "word_list": check_word_list,
    "url": check_url,
    "version_pin": check_version_pin,
    "sha256": check_sha256,
    "free_text": check_free_text,
    "command": check_command,
    "url_or_abs_path": check_url_or_abs_path,
    "rel_path": check_rel_path,
    "argv": check_argv,
    "cuda_architectures": check_cuda_architectures,
}
KINDS.update({f"{name}_or_empty": _or_empty(KINDS[name])
              for name in ("address", "cidr", "abs_path", "account", "word", "url", "version_pin", "sha256",
                           "nginx_size", "command", "url_or_abs_path", "rel_path")})
# Kinds whose entries must say why: the value is never checked (none), or only for one line of text, because
# where it goes it is quoted or passed as one argument and its ; { } # or quotes are data (free_text, argv).
NEEDS_WHY = ("none", "free_text", "argv")
# The kinds that take ; { } # and quotes (their entries say why); each still refuses control characters.
QUOTED = ("free_text", "argv")
