# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings registry's checkers of role volta.serving.prometheus (settings_checks/prometheus.yml).

Pure Python, no Ansible imports. Each is ``fn(value) -> None | (why, fix)``, ``{var}`` in the fix being the
variable's name. The intervals are written into prometheus.yml, the alertmanagers into it as a JSON list, the
web listen address into ARGS of /etc/default/prometheus (one space there adds a flag of the daemon's own).
The retention settings are _monitoring's (check_retention_time, check_retention_size).
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import check_address, check_port, show

# A Prometheus duration (model.ParseDuration): units largest first, each once.
DURATION_RE = re.compile(r"(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?")


def _text(value, what, fix):
    if not isinstance(value, str):
        return f"{show(value)} is not text ({what})", fix
    bad = sorted({c for c in value if c.isspace() or not c.isprintable() or c in ";{}#\"'`$\\"})
    if bad:
        return (f"{show(value)} is not {what}: it contains {' '.join(repr(c) for c in bad)}, which would be read as "
                "syntax (YAML of prometheus.yml, or a flag of the daemon's command line)"), fix
    return None


def check_interval(value):
    """prometheus_scrape_interval, prometheus_evaluation_interval: a duration such as 30s, in prometheus.yml."""
    fix = "set {var} to a duration such as 30s, 1m or 1m30s (units y w d h m s ms, largest first)"
    problem = _text(value, "a Prometheus duration", fix)
    if problem:
        return problem
    if not value or not DURATION_RE.fullmatch(value) or not any(c != "0" for c in value if c.isdigit()):
        return f"{show(value)} is not a Prometheus duration (a number and a unit, such as 30s)", fix
    return None


def _host_port(value, fix):
    """(why, fix) when *value* is no host:port (an IPv6 address in brackets), else None."""
    problem = _text(value, "host:port", fix)
    if problem:
        return problem
    match = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)|([^:\[\]]+):(\d+)", value)
    if not match:
        return f"{show(value)} is not host:port (an IPv6 address in brackets: [::1]:9090)", fix
    host, port = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    refused = check_address(host) or check_port(port)
    return (f"{show(value)}: {refused[0]}", fix) if refused else None


def check_web_listen_address(value):
    """prometheus_web_listen_address: host:port, written as --web.listen-address= into ARGS of the unit."""
    return _host_port(value, "set {var} to host:port such as 127.0.0.1:9090 (the role's readiness check calls it)")


def check_alertmanagers(value):
    """prometheus_alertmanagers: a list of host:port."""
    fix = 'write {var} as a list of host:port, for example ["alertmanager.example:9093"], or [] for none'
    if not isinstance(value, list):
        return f"{show(value)} is not a list of host:port", fix
    for index, entry in enumerate(value):
        refused = _host_port(entry, fix)
        if refused:
            return f"entry {index + 1} of the list: {refused[0]}", fix
    return None
