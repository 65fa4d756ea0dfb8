# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input hygiene of the serving plan: text that reaches a unit file, an nginx config or a rule.

Pure Python, no Ansible imports. Each function checks one thing and returns findings (see
``_findings.finding``); ``_plan.build_report`` calls them, so a bad value stops preflight before any
host is changed. Every pattern is a full match (``re.fullmatch``): ``$`` would let a trailing
newline through.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, finding

# The rules of the inputs' shape and text (id: (severity, overridable, what it is about); the registry,
# _rules.RULES, assembles every layer's).
CATALOGUE = {
    "missing-field": (ERROR, False, "a required field is not set"),
    "invalid-value": (ERROR, False, "a field has the wrong type or an impossible value"),
    "unknown-value": (ERROR, False, "an engine, model family, quantization, dtype or KV dtype that is not known"),
    "unknown-field": (ERROR, False, "an instance field volta.serving does not read (a typo?)"),
}

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


def secret_names(host, label, env):
    """Warnings for env names that look like credentials (TOKEN, SECRET, PASSWORD, KEY, ...)."""
    if not isinstance(env, dict):
        return []
    return [
        finding(
            "secret-in-env",
            host,
            label,
            "env",
            f"env sets {key}, which looks like a secret.",
            "env is written into the unit file (mode 0644) and shown by systemctl show to every local user.",
            f"move {key} to secret_env: it goes to a root-only EnvironmentFile (0600) that systemd reads.",
        )
        for key in sorted(k for k in env if isinstance(k, str))
        if any(word in key.upper() for word in SECRET_NAME_WORDS) and "API_KEY" not in key.upper()
    ]


def _secret_value_problem(value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"is a {type(value).__name__}, not a string"
    return _text_problem(value)


def check_secret_env(host, label, raw, reserved):
    """secret_env: a mapping of valid names (not in env, not *reserved*) to one-line values; values never shown."""
    secret = raw.get("secret_env", {})
    if not isinstance(secret, dict):
        return [
            _secret_finding(host, label, "secret_env is not a mapping of names to values.", "write it as NAME: value")
        ]
    out = check_env_names(host, label, "secret_env", secret)
    env = raw.get("env") if isinstance(raw.get("env"), dict) else {}
    for key in sorted(k for k in secret if isinstance(k, str)):
        problem = _secret_value_problem(secret[key])
        if problem:
            out.append(_secret_finding(host, label, f"the value of {key} {problem} (not shown).", "correct the value"))
        if key in env or key in reserved:
            where = "env" if key in env else "volta.serving"
            out.append(_secret_finding(host, label, f"{key} is also set by {where}.", f"remove {key} from one place"))
    return out


def _secret_finding(host, label, text, fix):
    return finding(
        "invalid-value",
        host,
        label,
        "secret_env",
        text,
        "secret_env is written, one NAME=value line each, to the instance's root-only EnvironmentFile.",
        f"{fix} in secret_env (values in Ansible Vault).",
    )


def secret_env_names(raw):
    """The names of secret_env (the plan carries names only, never the values)."""
    secret = raw.get("secret_env")
    return sorted(k for k in secret if isinstance(k, str)) if isinstance(secret, dict) else []


# Directories other programs keep files in: volta_secrets_dir must not be one of them (the role
# makes it 0750 root:<service group> and deletes the key files it no longer needs from it).
SHARED_DIRS = frozenset(
    ("/", "/etc", "/etc/ssl", "/etc/ssl/private", "/etc/nginx", "/etc/systemd", "/etc/systemd/system",
     "/etc/volta", "/root", "/home", "/var", "/var/lib", "/run", "/srv", "/opt", "/usr",
     "/usr/local", "/usr/local/etc", "/boot", "/dev", "/proc", "/sys", "/mnt", "/media",
     "/tmp", "/var/tmp")  # noqa: S108 - refused as secrets directories, never used
)  # fmt: skip


def _path_problem(path):
    if not isinstance(path, str) or not path.startswith("/"):
        return "is not an absolute path"
    if control_characters(path) or any(c.isspace() for c in path):
        return "contains whitespace or control characters"
    if "//" in path.rstrip("/") or any(part in (".", "..") for part in path.split("/")):
        return "is not a normalised path (no //, . or ..)"
    return None


def _path_finding(host, variable, path, problem, why, fix):
    """No finding when *problem* is None, else one invalid-value finding for the path setting *variable*."""
    if problem is None:
        return []
    return [finding("invalid-value", host, None, variable, f"{variable} {path!r} {problem}.", why, fix)]


def check_secrets_dir(host, path):
    """volta_secrets_dir: an absolute, normalised path of a directory only volta.serving uses."""
    problem = _path_problem(path)
    if problem is None and (path.rstrip("/") or "/") in SHARED_DIRS:
        problem = "is a directory other programs use"
    return _path_finding(
        host, "volta_secrets_dir", path, problem,
        "the key files live there; the role sets its mode to 0750 root:<service group> and deletes the key "
        "files it wrote and no longer needs.",
        "use a directory of its own, such as /etc/volta/secrets (the default).",
    )


def check_engines_root(host, path):
    """volta_engines_root: the programs' absolute path in ExecStart= (systemd needs one)."""
    return _path_finding(
        host, "volta_engines_root", path, _path_problem(path),
        "every unit's ExecStart= starts with a program under it; systemd needs an absolute path.",
        "use an absolute path such as /opt/volta/engines (the default).",
    )


def profile_text_problem(profile):
    """Why a profile override's program, flags or env cannot go into a unit file, or None."""
    words = [profile.get("program")] if "program" in profile else []
    words += list(profile.get("flags") or []) if isinstance(profile.get("flags"), list) else []
    env = profile.get("env") if isinstance(profile.get("env"), dict) else {}
    bad_names = [k for k in env if not (isinstance(k, str) and ENV_NAME_RE.fullmatch(k))]
    if bad_names:
        return f"env names {bad_names!r} are not valid environment variable names"
    for word in words + [v for v in env.values() if isinstance(v, str)]:
        if not isinstance(word, (str, int, float)) or isinstance(word, bool) or control_characters(word):
            return f"{word!r} is not a one-line string"
    return None
