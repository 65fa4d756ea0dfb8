# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall role's settings refusals, checked before anything on the host changes.

Pure Python, no Ansible imports (_settings imports Ansible's argument spec validator only for options with
suboptions; the firewall has none). Served by the ``volta.serving.firewall_settings_problems`` filter to
volta.serving.firewall's preflight (run by playbooks/settings.yml on the controller and again by the role,
also where the role runs without the settings play). First the settings registry's refusals of the firewall
variables, worded as the settings play words them (``HOST: VARIABLE: why. Fix: fix.``), then the role's own,
which name the host, the variable, why and the fix, and end with "Nothing was changed.", in the order the
role has always checked them in. ``check_*`` are the registry's checkers (settings_checks/firewall.yml).
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._cidr import split_cidrs
from ansible_collections.volta.serving.plugins.plugin_utils._settings import check_variable
from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import check_port_list, show
from ansible_collections.volta.serving.plugins.plugin_utils._shapes import jinja_int as as_int

BACKENDS = ("nftables", "ufw")
FORWARD_POLICIES = ("drop", "accept")
NETWORK_VARS = ("firewall_ssh_cidrs", "firewall_api_cidrs", "firewall_metrics_cidrs", "firewall_router_cidrs")
PORT_VARS = ("firewall_ssh_port", "firewall_extra_tcp_ports", "firewall_metrics_tcp_ports")
# The rollback must not fire while the controller still checks the new ruleset.
ROLLBACK_MARGIN_S = 30


def is_tcp_port(value):
    """True for 1 to 65535, written in digits only (``"22"`` or 22; not ``True``, ``22.0`` or ``"ssh"``)."""
    text = str(value)
    return text.isascii() and text.isdigit() and 1 <= int(text) <= 65535


def _listed(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def backend_problem(host, settings):
    backend = settings.get("firewall_backend")
    if backend in BACKENDS:
        return ""
    return (f"{host}: firewall_backend {backend} is not supported. Why: the role writes rules for nftables or "
            "ufw only. Fix: set firewall_backend to nftables (the default) or ufw. Nothing was changed.")


def ssh_problem(host, settings):
    if settings.get("firewall_ssh_cidrs"):
        return ""
    return (f"{host}: firewall_ssh_cidrs is empty. Why: the firewall drops every inbound connection that no rule "
            "allows, so with no network allowed to reach SSH (port "
            f"{settings.get('firewall_ssh_port')}) the controller and every operator would be locked out of this "
            f"host. Fix: set firewall_ssh_cidrs (group_vars or host_vars/{host}.yml) to the networks you "
            'administer from, for example ["192.0.2.0/24", "2001:db8::/48"]; to allow SSH from everywhere, '
            'write it out: ["0.0.0.0/0", "::/0"]. Nothing was changed.')


def networks_problem(host, settings):
    bad = [f"{name} {problem['message']}"
           for name in NETWORK_VARS
           for problem in split_cidrs(settings.get(name))["problems"]]
    if not bad:
        return ""
    return (f"{host}: invalid networks: {' '.join(bad)} Why: a rule for a network that is not the one meant "
            "opens or closes the wrong hosts. Nothing was changed.")


def ports_problem(host, settings):
    bad = [f"{name}: {port} is not a TCP port"
           for name in PORT_VARS
           for port in ([settings.get(name)] if name == "firewall_ssh_port" else _listed(settings.get(name)))
           if not is_tcp_port(port)]
    if not bad:
        return ""
    return (f"{host}: {'; '.join(bad)}. Why: the firewall would not open what you asked for. Fix: use TCP port "
            "numbers from 1 to 65535, and keep the engines' backend ports (loopback only) out of the ports opened "
            "to other networks. Nothing was changed.")


def timeouts_problem(host, settings):
    connect = settings.get("firewall_connect_timeout")
    rollback = settings.get("firewall_rollback_timeout")
    if as_int(connect) >= 1 and as_int(rollback) >= as_int(connect) + ROLLBACK_MARGIN_S:
        return ""
    return (f"{host}: firewall_rollback_timeout ({rollback}) must be at least firewall_connect_timeout "
            f"({connect}) + {ROLLBACK_MARGIN_S} seconds, and firewall_connect_timeout at least 1. Why: the host "
            "rolls back by itself after firewall_rollback_timeout; a shorter time would undo a good ruleset "
            "while the controller is still checking it. Fix: raise firewall_rollback_timeout. Nothing was changed.")


CHECKS = (backend_problem, ssh_problem, networks_problem, ports_problem, timeouts_problem)


def registry_problems(host, settings):
    """The settings registry's refusals of *settings*, worded as the settings play words them."""
    return [problem for name in sorted(settings) for problem in check_variable(host, name, settings[name])]


def settings_problems(settings, host):
    """The refusals of *settings* (the firewall_* variables by name) for *host*: the registry's (one per variable,
    as the settings play words them), else the role's own, in check order (the empty SSH list and the timeouts,
    which the registry does not see, and the backend, networks and ports again)."""
    return registry_problems(host, settings) or [problem for problem in (check(host, settings) for check in CHECKS)
                                                 if problem]


# --- the settings registry's checkers (settings_checks/firewall.yml: _firewall_settings:check_...) ------------
def _choice(value, choices, fix):
    if isinstance(value, str) and value in choices:
        return None
    return f"{show(value)} is not one of {', '.join(choices)}", fix


def check_backend(value):
    """firewall_backend: nftables or ufw (it picks the rules, the package and the unit)."""
    return _choice(value, BACKENDS, "set {var} to nftables (the default) or ufw")


def check_forward_policy(value):
    """firewall_forward_policy: drop or accept (written into the forward chain's policy)."""
    return _choice(value, FORWARD_POLICIES, "set {var} to drop (the default) or accept")


def check_ssh_port(value):
    """firewall_ssh_port: the port sshd listens on, 1-65535 (the first rule of every ruleset)."""
    if is_tcp_port(value) and not isinstance(value, (bool, float)):
        return None
    digits = str(value).isdigit() and not isinstance(value, (bool, float))
    what = "is not a TCP port (1-65535)" if digits else "is not a whole number"
    return (f"{show(value)} {what}: the firewall's first rule lets SSH in on this port, so no rule would match sshd",
            "set {var} to the port sshd listens on, a whole number from 1 to 65535, e.g. 22")


def check_exporter_tcp_ports(value):
    """firewall_exporter_tcp_ports: null (the serving plan's exporters' ports) or a list of TCP ports."""
    return None if value is None else check_port_list(value)
