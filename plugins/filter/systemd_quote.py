# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.systemd_exec, systemd_env and systemd_env_file: argv and environment for systemd."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@")


def _check(word, what):
    if not isinstance(word, (str, int, float)) or isinstance(word, bool):
        raise AnsibleFilterError(f"{what}: {word!r} is not a string")
    text = str(word)
    bad = [c for c in text if ord(c) < 32 or ord(c) == 127]
    if bad:
        raise AnsibleFilterError(f"{what}: {text!r} contains a control character; a unit file cannot hold it")
    return text


def _quote(text, dollar):
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if dollar:
        escaped = escaped.replace("$", "$$")
    return f'"{escaped}"'


def systemd_exec_word(word):
    """One argv word as systemd's ExecStart= parser reads it back unchanged."""
    text = _check(word, "systemd_exec")
    if text and all(c in _PLAIN for c in text):
        return text
    return _quote(text, dollar=True)


def systemd_exec(argv):
    """The argv list as an ExecStart= value."""
    if not isinstance(argv, (list, tuple)) or not argv:
        raise AnsibleFilterError(f"systemd_exec: expected a non-empty list, got {argv!r}")
    program = _check(argv[0], "systemd_exec")
    if not program.startswith("/"):
        raise AnsibleFilterError(f"systemd_exec: the program {program!r} must be an absolute path")
    return " ".join(systemd_exec_word(word) for word in argv)


def _env_name(name, what):
    key = _check(name, what)
    if not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
        raise AnsibleFilterError(f"{what}: {key!r} is not a valid environment variable name")
    return key


def systemd_env_file(env):
    """A mapping as the text of an EnvironmentFile=: one NAME="value" line per item, sorted by name.

    In double quotes systemd's env-file parser takes a backslash before one of " \\ ` $ as that
    character, so those four are escaped and every value reads back unchanged. Values are never
    put into an error message (they are secrets).
    """
    if not isinstance(env, dict):
        raise AnsibleFilterError("systemd_env_file: expected a mapping")
    lines = []
    for name in sorted(env):
        key = _env_name(name, "systemd_env_file")
        value = env[name]
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise AnsibleFilterError(f"systemd_env_file: the value of {key} is not a string (not shown)")
        text = str(value)
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise AnsibleFilterError(f"systemd_env_file: the value of {key} contains a control character (not shown)")
        escaped = "".join("\\" + c if c in '"\\`$' else c for c in text)
        lines.append(f'{key}="{escaped}"\n')
    return "".join(lines)


def systemd_env(env):
    """A mapping as the words of Environment= lines: one quoted NAME=value per item, sorted by name."""
    if not isinstance(env, dict):
        raise AnsibleFilterError(f"systemd_env: expected a mapping, got {env!r}")
    out = []
    for name in sorted(env):
        key = _env_name(name, "systemd_env")
        value = env[name]
        value = "" if value is None else _check(value, "systemd_env")
        out.append(_quote(f"{key}={value}", dollar=False))
    return out


class FilterModule:
    def filters(self):
        return {"systemd_exec": systemd_exec, "systemd_env": systemd_env, "systemd_env_file": systemd_env_file}
