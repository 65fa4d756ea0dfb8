# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet router's settings (role volta.serving.router), each checked before anything is rendered.

Pure Python, no Ansible imports. Every ``router_*`` value is pasted into the router's nginx configuration
(``router.conf.j2``), a file name or a module argument, so each must be exactly of its syntax (a full match):
an unchecked ``router_listen_address`` once carried a ``location`` that served the router's keys file.

Each checker is ``fn(value) -> None | (why, fix)`` (the settings registry,
``plugins/plugin_utils/settings_checks/router.yml``, names them); ``check_settings(host, settings, context)``
applies every one of them and the rules that need more than one value (the router has no TLS: a public
listen or source address is refused; a router port that is the host's SSH port), and returns messages
``HOST: VARIABLE: why. Fix: fix``. The role's ``tasks/preflight.yml`` asserts them before any host changes.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.volta.serving.plugins.plugin_utils._cidr import check_cidr
from ansible_collections.volta.serving.plugins.plugin_utils._gateway import (
    BURST_MAX,
    NON_PUBLIC,
    RATE_RE,
    SECONDS_RE,
    SIZE_RE,
)

# A host name as the router may connect to it (RFC 1123 labels), or an IP address (checked apart).
HOSTNAME_RE = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                         r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?")
# A Debian package name (Debian Policy 5.6.7), optionally pinned to a version (=VERSION).
PACKAGE_RE = re.compile(r"[a-z0-9][a-z0-9+.-]+(?:=[A-Za-z0-9.+~:-]+)?")
# nginx's keepalive (idle connections per worker to an upstream): at least one.
KEEPALIVE_MAX = 10000
DRAIN_MAX = 86400


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _int(value):
    """A whole number as the argument spec reads it (an int, or a string of digits), else None."""
    if _whole(value):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,9}", value):
        return int(value)
    return None


def _is_port(value):
    return _whole(value) and 1 <= value <= 65535


def _ip(value):
    """The IP address *value* is (no zone id, no brackets, no surrounding space), or None."""
    if not isinstance(value, str) or value != value.strip() or "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def is_public(network):
    """Whether an address or network (ipaddress object) reaches outside the private ranges."""
    network = ipaddress.ip_network(network)
    return not any(network.version == n.version and network.subnet_of(n) for n in NON_PUBLIC)


def check_listen_address(value):
    """router_listen_address: "" (every address) or one IP address that is not public (the router has no TLS)."""
    if value == "":
        return None
    address = _ip(value)
    if address is None:
        why = f"{value!r} is not an IPv4 or IPv6 address"
        if isinstance(value, str) and "%" in value:
            why += " (nginx cannot listen on an address with a zone id such as %eth0)"
        return (f"{why}, so nginx would read it as configuration (it is pasted into every listen directive of the "
                "router)", 'set router_listen_address to one private address such as 10.0.0.2 (no port, no '
                'brackets), or "" for every address')
    if is_public(address):
        return (f"{value} is a public address and the router serves plain HTTP (it has no TLS): the service keys and "
                "every prompt would cross the internet unencrypted",
                "set router_listen_address to the router's private address, and put a TLS-terminating proxy in front "
                "of it for clients outside the private network")
    return None


def check_size(value):
    """router_client_max_body_size: an nginx size (bytes, or with k, m or g)."""
    if (_whole(value) and value >= 0) or (isinstance(value, str) and SIZE_RE.fullmatch(value)):
        return None
    return (f"{value!r} is not an nginx size, so nginx would read it as configuration (it is pasted into "
            "client_max_body_size)", "set router_client_max_body_size to a number with an optional unit k, m or g, "
            "for example 64m")


def check_seconds(value):
    """router_proxy_{connect,read,send}_timeout: whole seconds, pasted as ``<n>s``."""
    if _int(value) is not None and SECONDS_RE.fullmatch(str(_int(value))):
        return None
    unit = " (the router adds the unit s itself)" if isinstance(value, str) and re.fullmatch(r"\d+\s*s", value) else ""
    return (f"{value!r} is not a whole number of seconds{unit}; it is pasted into the nginx configuration as "
            "proxy_*_timeout <n>s", "write a positive whole number of seconds without a unit, for example 5")


def check_rate(value):
    """router_unauthorized_rate: an nginx limit_req rate (requests per second or minute)."""
    if isinstance(value, str) and RATE_RE.fullmatch(value):
        return None
    return (f"{value!r} is not an nginx request rate, so nginx would read it as configuration (it is pasted into "
            "limit_req_zone rate=)", "set router_unauthorized_rate to a whole number of requests per second or "
            "per minute, for example 30r/m")


def check_burst(value):
    """router_unauthorized_burst: 0 to BURST_MAX, pasted into limit_req burst=."""
    if _int(value) is not None and 0 <= _int(value) <= BURST_MAX:
        return None
    return (f"{value!r} is not a whole number from 0 to {BURST_MAX} (it is pasted into limit_req burst=)",
            "write a whole number, for example 20")


def check_keepalive(value):
    """router_keepalive: idle connections per worker (nginx refuses 0 and less)."""
    if _int(value) is not None and 1 <= _int(value) <= KEEPALIVE_MAX:
        return None
    return (f"{value!r} is not a whole number from 1 to {KEEPALIVE_MAX} (nginx's keepalive of each upstream; "
            "nginx refuses the configuration otherwise)", "write a whole number of idle connections, for example 16")


def check_drain_timeout(value):
    """router_drain_timeout: seconds the rotation entry point waits (a module argument)."""
    if _int(value) is not None and 1 <= _int(value) <= DRAIN_MAX:
        return None
    return (f"{value!r} is not a whole number of seconds from 1 to {DRAIN_MAX}",
            "write how long an upgrade may wait for the router's requests to a host, for example 600")


def check_packages(value):
    """router_packages: a list of Debian package names (apt installs them)."""
    if isinstance(value, list) and value and all(isinstance(p, str) and PACKAGE_RE.fullmatch(p) for p in value):
        return None
    return (f"{value!r} is not a list of Debian package names", "write a list such as [nginx] (name=version pins one)")


def check_ports(value):
    """router_ports: a mapping service name -> TCP port (the ports themselves are checked by the plan)."""
    if isinstance(value, dict):
        bad = {str(k): v for k, v in value.items() if not _is_port(v)}
        if not bad:
            return None
        name, port = next(iter(bad.items()))
        return (f"the port of {name} is {port!r}, not a TCP port", "give each service a whole number from 1 to 65535")
    example = "{lab-chat: 9000}"
    return (f"{value!r} is a {type(value).__name__}, not a mapping of service names to ports (a list is not read at "
            "all: every service would stay on its hosts' service_port)",
            f"write router_ports as a mapping served_model_name -> port, for example router_ports: {example}")


def check_backend_address(value):
    """router_backend_address: one IP address or host name, without a port (the router adds the service port)."""
    if _ip(value) is not None or (isinstance(value, str) and HOSTNAME_RE.fullmatch(value)):
        return None
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9.-]+:\d+|\[[0-9A-Fa-f:.]+\]:\d+", value):
        return (f"{value!r} carries a port; the router connects to the host's gateway on its service_port and "
                "would read this as another address", f"set router_backend_address to {value.rsplit(':', 1)[0]!r} "
                "(the address alone)")
    return (f"{value!r} is not an IP address or a host name, so nginx would read it as configuration (it is "
            "pasted into the upstream server line)", "set router_backend_address to the address of the host's "
            "gateway as the router reaches it, for example 10.0.0.11")


def _source_problem(entry):
    if isinstance(entry, str) and entry != entry.strip():
        return f"{entry!r} has whitespace around it", "write the address alone, for example 10.0.0.2"
    network, problem = check_cidr(entry)
    if problem:
        return problem["why"], problem["fix"]
    if is_public(network):
        return (f"{network} is a public network: the router talks plain HTTP to the hosts' gateways (the keys "
                "and every prompt), and the hosts' firewalls would let it in on the service ports",
                "put the router and the hosts on a private network and set router_source_address to the router's "
                "private address")
    return None


def check_source_address(value):
    """router_source_address: an address or network (or a list of them), private, without host bits."""
    entries = value if isinstance(value, list) else [value]
    if not entries:
        return ("an empty list names no address, so the hosts' firewalls would let no router in",
                "set router_source_address to the router's address, or leave it unset")
    for entry in entries:
        problem = _source_problem(entry)
        if problem:
            return problem
    return None


# Every router setting and its checker (the role's argument spec, main entry point).
CHECKS = {
    "router_ports": check_ports,
    "router_backend_address": check_backend_address,
    "router_source_address": check_source_address,
    "router_packages": check_packages,
    "router_listen_address": check_listen_address,
    "router_proxy_connect_timeout": check_seconds,
    "router_proxy_read_timeout": check_seconds,
    "router_proxy_send_timeout": check_seconds,
    "router_client_max_body_size": check_size,
    "router_unauthorized_rate": check_rate,
    "router_unauthorized_burst": check_burst,
    "router_keepalive": check_keepalive,
    "router_drain_timeout": check_drain_timeout,
}


def _line(host, variable, problem):
    why, fix = problem
    return f"{host}: {variable}: {why}. Fix: {fix}."


def _exposure(host, settings, context):
    """A public inventory address (ansible_host) where the router listens on every address, or where it is the
    address the hosts' firewalls let in (no router_source_address): the router has no TLS."""
    address = _ip(str(context.get("ansible_host") or ""))
    if address is None or not is_public(address):
        return []
    out = []
    if settings.get("router_listen_address") == "":
        out.append(_line(host, "router_listen_address", (
            f'"" listens on every address of {host}, whose address {address} (ansible_host) is public, and the '
            "router serves plain HTTP (it has no TLS)",
            "set router_listen_address to the router's private address, and put a TLS-terminating proxy in front "
            "of it for clients outside the private network")))
    if settings.get("router_source_address") is None:
        out.append(_line(host, "router_source_address", (
            f"not set, so the hosts' firewalls let {host}'s ansible_host {address}, a public address, in on their "
            "service ports, and the router talks plain HTTP to them (the keys and every prompt)",
            f"set router_source_address for {host} to the private address it reaches the hosts from")))
    return out


def check_settings(host, settings, context=None):
    """Every router setting of *host* (``variable -> value``, those set or defaulted) and the rules over several.

    *context*: ``ansible_host`` of the router (a public one refuses a router that listens on every address).
    Returns messages ``HOST: VARIABLE: why. Fix: fix.``, the first per variable.
    """
    out = []
    for variable, checker in CHECKS.items():
        if variable in settings and settings[variable] is not None:
            problem = checker(settings[variable])
            if problem:
                out.append(_line(host, variable, problem))
    return out + _exposure(host, settings, context or {})
