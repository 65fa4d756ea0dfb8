# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.systemd_exec, systemd_env and systemd_env_file: argv and environment for systemd;
systemd_paths, systemd_ip_allow and systemd_account: the words of the lines a unit takes from the settings."""

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


def _refuse(directive, variable, refused):
    why, fix = refused
    raise AnsibleFilterError(f"{directive}: {why}. Fix: {fix.replace('{var}', variable)}.")


def systemd_paths(paths, variable, directive="ReadWritePaths"):
    """One path or a list of them as the value of *directive* (ReadWritePaths=, WorkingDirectory=): the paths
    joined by spaces, each refused unless systemd reads it back as that one directory and it is not a system
    directory (plugin_utils/_units.path_problem, the settings registry's check of the same settings)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._units import path_problem

    words = [paths] if isinstance(paths, str) else paths
    if not isinstance(words, (list, tuple)) or not words:
        raise AnsibleFilterError(f"systemd_paths: expected a path or a non-empty list of paths, got {paths!r}")
    for word in words:
        refused = path_problem(word)
        if refused:
            _refuse(directive, variable, refused)
    return " ".join(words)


def systemd_ip_allow(entries, variable="engine_service_ip_address_allow"):
    """A list of addresses, networks and systemd's names of them as the value of IPAddressAllow= (whose words
    systemd reads unquoted); "any", a /0 and every word systemd would not read as one address are refused."""
    from ansible_collections.volta.serving.plugins.plugin_utils._units import ip_allow_problem

    if not isinstance(entries, (list, tuple)):
        raise AnsibleFilterError(f"systemd_ip_allow: expected a list, got {entries!r}")
    for entry in entries:
        refused = ip_allow_problem(entry)
        if refused:
            _refuse("IPAddressAllow", variable, refused)
    return " ".join(entries)


ACCOUNT_DIRECTIVES = {"User": "user", "Group": "group", "SupplementaryGroups": "supplementary group"}


def systemd_account(names, directive, variable):
    """A user (*directive* User), a group (Group) or a list of groups (SupplementaryGroups) as the value of
    that line: names only, never root, id 0 or a group that gives more than the GPUs."""
    from ansible_collections.volta.serving.plugins.plugin_utils._units import account_problem

    if directive not in ACCOUNT_DIRECTIVES:
        raise AnsibleFilterError(f"systemd_account: {directive!r} is not one of {', '.join(ACCOUNT_DIRECTIVES)}")
    words = names if directive == "SupplementaryGroups" else [names]
    if not isinstance(words, (list, tuple)):
        raise AnsibleFilterError(f"systemd_account: {directive} takes a list of groups, got {names!r}")
    for word in words:
        refused = account_problem(word, ACCOUNT_DIRECTIVES[directive])
        if refused:
            _refuse(directive, variable, refused)
    return " ".join(str(word) for word in words)


class FilterModule:
    def filters(self):
        return {"systemd_exec": systemd_exec, "systemd_env": systemd_env, "systemd_env_file": systemd_env_file,
                "systemd_paths": systemd_paths, "systemd_ip_allow": systemd_ip_allow,
                "systemd_account": systemd_account}
