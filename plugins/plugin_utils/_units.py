# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine's systemd unit may touch (devices, socket families, paths, addresses, account) and its start limit.

Pure Python, no Ansible imports. ``unit_sandbox(gpu_count)`` is the part of the plan that the
engine_service template renders as ``DeviceAllow=`` and ``RestrictAddressFamilies=``;
``check_start_limit(host, units)`` refuses a start limit that can never trip. ``path_problem``,
``ip_allow_problem``, ``account_problem`` and ``ray_token_problem`` say why a setting cannot reach a unit (or the
Ray token file); the settings registry's checkers (``check_*``) and the unit's filters (filter/systemd_quote.py)
both call them.

Sources (the reasons are repeated in roles/engine_service/templates/engine.service.j2):
- /proc/devices names of the NVIDIA driver: ``nvidia-frontend`` (major 195: /dev/nvidia<N>,
  /dev/nvidiactl, /dev/nvidia-modeset) and ``nvidia-uvm`` (/dev/nvidia-uvm, /dev/nvidia-uvm-tools;
  a dynamic major). The explicit paths are listed as well: systemd resolves ``char-<name>`` from
  /proc/devices when the unit starts, and a driver that registers its major under another name
  would otherwise be denied everything.
- /dev/nvidia-caps (MIG capabilities) is left out: the V100 has no MIG.
- glibc's getifaddrs() uses an AF_NETLINK socket; NCCL's bootstrap, Gloo and ZeroMQ list the
  interfaces with it. AF_UNIX: vLLM's ZeroMQ ipc:// sockets and NCCL's proxy (CUDA IPC handles are
  passed as file descriptors); AF_INET/AF_INET6: the API port, torch.distributed's TCP store.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import re

from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding

NVIDIA_DEVICE_GROUPS = ("char-nvidia-frontend", "char-nvidia-uvm")
NVIDIA_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
ADDRESS_FAMILIES = ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK")
UNIT_KEYS = ("restart_sec", "start_limit_interval", "start_limit_burst")
# engine_service's defaults: at most 5 starts in 10 minutes, then the unit stays failed.
DEFAULT_UNITS = {"restart_sec": 10, "start_limit_interval": 600, "start_limit_burst": 5}


def _count(value):
    """*value* as a non-negative int, or None (bools are not counts)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def unit_sandbox(gpu_count):
    """``{"device_allow": [...], "address_families": [...]}`` for a host with *gpu_count* GPUs."""
    gpus = _count(gpu_count) or 0
    nodes = list(NVIDIA_CONTROL_NODES) + [f"/dev/nvidia{index}" for index in range(gpus)]
    return {
        "device_allow": [f"{name} rw" for name in (*NVIDIA_DEVICE_GROUPS, *nodes)],
        "address_families": list(ADDRESS_FAMILIES),
    }


def _positive_problems(host, units):
    findings = []
    for key in UNIT_KEYS:
        value = units.get(key)
        number = _count(value)
        if number is None or (number == 0 and key != "restart_sec"):
            least = "0" if key == "restart_sec" else "1"
            findings.append(
                finding(
                    "invalid-value",
                    host,
                    None,
                    f"engine_service_{key}",
                    f"engine_service_{key} is {value!r}, not a whole number of at least {least}.",
                    "it is written into every engine unit (RestartSec=, StartLimitIntervalSec=, StartLimitBurst=).",
                    f"set engine_service_{key} to a whole number of at least {least}.",
                )
            )
    return findings


def check_start_limit(host, units):
    """Findings for engine_service_restart_sec / _start_limit_interval / _start_limit_burst.

    The limit only trips when *burst* starts fit in the interval: restarts come at least
    restart_sec apart, so (burst - 1) x restart_sec must be shorter than the interval.
    """
    units = {**DEFAULT_UNITS, **{k: v for k, v in (units or {}).items() if v is not None}}
    findings = _positive_problems(host, units)
    if findings:
        return findings
    restart, interval, burst = (_count(units[key]) for key in UNIT_KEYS)
    if (burst - 1) * restart < interval:
        return []
    return [
        finding(
            "invalid-value",
            host,
            None,
            "engine_service_start_limit_interval",
            f"{burst} starts, {restart} s apart (engine_service_restart_sec), take {(burst - 1) * restart} s, "
            f"not less than engine_service_start_limit_interval {interval} s: the start limit never trips.",
            "a broken engine would restart forever instead of ending in the failed state.",
            f"set engine_service_start_limit_interval above {(burst - 1) * restart}, or lower "
            "engine_service_start_limit_burst or engine_service_restart_sec.",
        )
    ]


# What engine_service's settings put into every unit (User=, Group=, SupplementaryGroups=, WorkingDirectory=,
# ReadWritePaths=, IPAddressAllow=) and the Ray token. Each check returns None or ``(why, fix)``: the settings
# registry (settings_checks/engine_service.yml) refuses the value before any host changes, and the unit's
# filters (plugins/filter/systemd_quote.py) refuse it again where the line is written. A newline in any of
# them would start a line of the operator's choosing in [Service]: ``ExecStartPre=+...`` runs as root.
# ``{var}`` in a fix is the variable's name.

# A path systemd reads as one word of ReadWritePaths= (space-separated, % starts a specifier) and that
# names itself (no . or .. component, no // and no trailing /).
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+@,=~")
# Directories an engine never writes: the directory and everything under it.
SYSTEM_TREES = {
    "/etc": "the system's configuration (systemd units, sudoers, cron, the API keys under /etc/volta)",
    "/usr": "the system's programs and libraries",
    "/bin": "the system's programs",
    "/sbin": "the system's programs",
    "/lib": "the system's libraries",
    "/lib32": "the system's libraries",
    "/lib64": "the system's libraries",
    "/libx32": "the system's libraries",
    "/boot": "the kernel and the boot loader",
    "/root": "the superuser's home",
    "/proc": "the kernel's interfaces",
    "/sys": "the kernel's interfaces",
    "/dev": "the device nodes",
    "/run": "the running services' sockets and state",
    "/var/spool": "the cron and mail queues (a file there runs as its owner, root included)",
    "/var/lib/systemd": "systemd's state",
    "/var/lib/volta-serving": "the record of the engine install each instance was started on (read as root)",
}
# Directories that hold many services' data: the directory itself is refused, a directory of its own under
# it is what an engine may write.
SYSTEM_ROOTS = {
    "/": "the root of the file system",
    "/var": "the parent of every service's state, logs and queues",
    "/var/lib": "the parent of every service's state",
    "/var/cache": "the parent of every service's cache",
    "/var/log": "the parent of every service's logs",
    "/var/tmp": "a directory every user shares",  # noqa: S108  a path refused, never opened
    "/tmp": "a directory every user shares",  # noqa: S108  a path refused, never opened
    "/opt": "the parent of the installed software (the engines' installs are under it)",
    "/srv": "the parent of the served data (the models are under it)",
    "/home": "the parent of the users' homes",
    "/mnt": "the parent of the mounted file systems",
    "/media": "the parent of the mounted file systems",
}
# systemd's symbolic names of IPAddressAllow= (its parser reads each word unquoted); "any" is refused.
IP_ALLOW_NAMES = ("localhost", "link-local", "multicast")
# The widest network an engine may reach: wider ones are most of the Internet, and the filter would not hold.
IP_ALLOW_MIN_PREFIX = {4: 8, 6: 16}
# Accounts of the distribution or of another service: the role would change them (groups, home, shell) and
# the engines would run with their files.
SYSTEM_ACCOUNTS = frozenset((
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
    "backup", "list", "irc", "gnats", "nobody", "nogroup", "_apt", "messagebus", "sshd", "syslog", "nginx",
    "polkitd", "systemd-network", "systemd-resolve", "systemd-timesync", "volta-exporter",
))
# Groups that give more than the GPUs: root's files, the disks, the password hashes, the logs, Docker's
# socket (root), sudo, /usr/local (staff), the gateway's key files (www-data).
PRIVILEGED_GROUPS = {
    "root": "the superuser's group",
    "0": "the superuser's group",
    "sudo": "it may run sudo",
    "wheel": "it may run sudo",
    "admin": "it may run sudo",
    "adm": "it reads the system logs",
    "systemd-journal": "it reads the whole journal",
    "disk": "it has raw access to every disk",
    "kmem": "it reads the kernel's memory",
    "shadow": "it reads the password hashes",
    "docker": "the Docker socket is root",
    "lxd": "the LXD socket is root",
    "staff": "it writes /usr/local",
    "www-data": "it reads the gateway's key files",
    "nginx": "it reads the gateway's key files",
}
RAY_TOKEN_MIN_LENGTH = 32
# Words of the texts written where a token belongs (templates, examples); a token holding one is refused.
PLACEHOLDER_WORDS = ("replace", "changeme", "change-me", "change_me", "example", "placeholder", "your",
                     "secret", "password", "token", "dummy", "todo", "xxxx")


def _show(value):
    """*value* as a refusal quotes it: JSON, so that a newline is shown as \\n and the message stays one line."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _control(text):
    return sorted({repr(c) for c in str(text) if ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029"})


def _one_line(value, what, fix):
    """(why, fix) when *value* is no text or holds a control character (a new line of the unit), else None."""
    if not isinstance(value, str):
        return f"{_show(value)} is not {what} written as text", fix
    if _control(value):
        return (f"{_show(value)} contains the control character(s) {', '.join(_control(value))}: in a unit it would "
                "end the line and start one of its own (ExecStartPre=+... runs as root)"), fix
    return None


def path_problem(value):
    """Why *value* cannot be a directory the engines may write (ReadWritePaths=, their home, the cache root)."""
    fix = "set {var} to absolute paths of directories of the engines' own, such as /srv/volta-scratch"
    problem = _one_line(value, "a path", fix)
    if problem:
        return problem
    if not value.startswith("/"):
        return f"{_show(value)} is not an absolute path: systemd refuses a relative one", fix
    bad = sorted({c for c in value if c not in _PATH_CHARS})
    if bad:
        return (f"{_show(value)} contains {' '.join(repr(c) for c in bad)}: systemd would read it as two paths or a "
                "specifier (%)", "set {var} to paths of letters, digits and / . _ - + @ , = ~ only")
    if value != "/" and (value.endswith("/") or "//" in value or {".", ".."} & set(value.split("/"))):
        return f"{_show(value)} is not written plainly (a trailing /, // or a . or .. component)", \
            f"write it as {posixpath.normpath(value)!r} (or another path of the engines' own)"
    for tree, what in SYSTEM_TREES.items():
        if value == tree or value.startswith(tree + "/"):
            where = "is" if value == tree else f"is inside {tree},"
            return f"{_show(value)} {where} {what}: an engine that writes there can change what root runs", fix
    if value in SYSTEM_ROOTS:
        return f"{_show(value)} is {SYSTEM_ROOTS[value]}: an engine would write every service's files there", fix
    return None


def ip_allow_problem(value):
    """Why *value* cannot be one word of IPAddressAllow= (systemd reads each word unquoted)."""
    fix = ("set {var} to networks the engines must reach, such as [localhost, 10.20.0.0/16]; [] turns the "
           "filter off (every address), on purpose")
    problem = _one_line(value, "an address", fix)
    if problem:
        return problem
    if value == "any":
        return "\"any\" allows every address, which turns the engines' IP filter off while it looks on", fix
    if value in IP_ALLOW_NAMES:
        return None
    if "%" in value:
        return f"{_show(value)} carries a zone id (%...), which systemd does not read", fix
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return (f"{_show(value)} is not an address, a network or one of {', '.join(IP_ALLOW_NAMES)}: systemd would "
                "refuse the unit or read it as several words"), fix
    least = IP_ALLOW_MIN_PREFIX[network.version]
    if network.prefixlen == 0:
        return f"{_show(value)} allows every IPv{network.version} address, which turns the IP filter off", fix
    if network.prefixlen < least:
        return (f"{_show(value)} is wider than a /{least} ({network.num_addresses} addresses): most of the Internet, "
                "so the IP filter would not hold"), fix
    return None


def _number(value):
    """*value* as an int when it is a whole number or text of digits, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def account_problem(value, what="user"):
    """Why *value* cannot be the engines' account (*what*: user, group or supplementary group)."""
    fix = "set {var} to an account of the engines' own, such as volta (the role creates it)"
    if what != "user":
        fix = "set {var} to a group of the engines' own, such as volta" if what == "group" else \
            "set {var} to the groups of the GPU device nodes only, such as [video, render]"
    superuser = "the superuser" if what == "user" else "the superuser's group"
    number = _number(value)
    if number == 0:
        return f"{_show(value)} is {superuser} (id 0): the engines would run with root's rights", fix
    if number is not None:
        return f"{_show(value)} is a number: the role creates and checks the {what} by name", fix
    problem = _one_line(value, f"a {what} name", fix)
    if problem:
        return problem
    if value == "root":
        return f"\"root\" is {superuser}: the engines would run with root's rights", fix
    if what != "user" and value in PRIVILEGED_GROUPS:
        return f"{_show(value)} gives the engines more than the GPUs: {PRIVILEGED_GROUPS[value]}", fix
    if value in SYSTEM_ACCOUNTS:
        return (f"{_show(value)} is an account of the system or of another service: the role would change it, and "
                "the engines would run with its files", fix)
    if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", value):
        return (f"{_show(value)} is not a {what} name (lowercase letters, digits, _ and -, starting with a letter "
                "or _, at most 32)"), fix
    return None


def ray_token_problem(value):
    """Why *value* cannot be the Ray cluster's token; never quotes it ("" is fine: the head makes one)."""
    fix = (f"put a token of at least {RAY_TOKEN_MIN_LENGTH} random characters in Ansible Vault "
           "(openssl rand -hex 32), or set {var} to \"\" and the head generates one")
    if value == "" or value is None:
        return None
    if not isinstance(value, str):
        return "the token (not shown) is not text", fix
    if _control(value) or any(c.isspace() for c in value):
        return "the token (not shown) contains whitespace or a control character, which the token file cannot " \
            "hold unchanged", fix
    if not re.fullmatch(r"[A-Za-z0-9._~+/=-]+", value):
        return "the token (not shown) contains characters other than A-Z a-z 0-9 . _ ~ + / = -", fix
    if len(value) < RAY_TOKEN_MIN_LENGTH:
        return (f"the token (not shown) is {len(value)} characters long, shorter than {RAY_TOKEN_MIN_LENGTH}: "
                "whoever reaches Ray's ports runs code on every member with it"), fix
    lowered = value.lower()
    if any(word in lowered for word in PLACEHOLDER_WORDS) or len(set(value)) < 8:
        return ("the token (not shown) reads like a placeholder (a word such as replace, example, secret or token, "
                "or few distinct characters), not a random secret"), fix
    return None


def _each(value, check, example):
    """A list setting: (why, fix) of its first refused entry, named by position, or of the list itself."""
    if not isinstance(value, list):
        return f"{_show(value)} is not a list", f"write {{var}} as a YAML list, for example {example}"
    for index, entry in enumerate(value):
        refused = check(entry)
        if refused:
            return f"entry {index + 1} of the list: {refused[0]}", refused[1]
    return None


# The settings registry's checkers of engine_service (settings_checks/engine_service.yml): fn(value) -> None
# or (why, fix).
def check_user(value):
    """engine_service_user: the engines' own account, never root (name or uid 0) or another service's."""
    return account_problem(value, "user")


def check_group(value):
    """engine_service_group: the account's own group, never root's or a privileged one."""
    return account_problem(value, "group")


def check_device_groups(value):
    """engine_service_device_groups: the groups of the GPU device nodes, none that gives more."""
    return _each(value, lambda entry: account_problem(entry, "supplementary group"), "[video, render]")


def check_writable_dir(value):
    """engine_service_home, engine_service_cache_root: a directory of the engines' own (ReadWritePaths=)."""
    return path_problem(value)


def check_read_write_paths(value):
    """engine_service_read_write_paths: directories of the engines' own, each one word of ReadWritePaths=."""
    return _each(value, path_problem, "[/srv/volta-scratch]")


def check_ip_address_allow(value):
    """engine_service_ip_address_allow: addresses and networks, never every address."""
    return _each(value, ip_allow_problem, "[localhost, 10.20.0.0/16]")


def check_ray_token(value):
    """engine_service_ray_token: "" or a random secret; the refusal never shows it."""
    return ray_token_problem(value)


def _at_least(value, least):
    number = _number(value)
    if number is None or number < least:
        return (f"{_show(value)} is not a whole number of at least {least}",
                f"set {{var}} to a whole number of at least {least}")
    return None


def check_count(value):
    """A whole number of at least 1 (seconds of a timeout, an interval, a number of lines)."""
    return _at_least(value, 1)


def check_count_or_zero(value):
    """A whole number of at least 0 (RestartSec=, the drain timeout)."""
    return _at_least(value, 0)
