# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the fleet router (role volta.serving.router, the serving plan, the firewall, the playbooks).

The logic is in plugins/plugin_utils/_router.py; these read the inventory (hostvars) into plain views.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def _plain(value):
    """Templated inventory values (lazy containers in ansible-core 2.19) as plain dicts, lists and strings."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _vars(hostvars, host):
    try:
        return hostvars[host]
    except KeyError as exc:
        raise AnsibleFilterError(f"router: {host} is not a host of the inventory") from exc


def _host_view(hostvars, host):
    hv = _vars(hostvars, host)
    keys = hv.get("api_gateway_keys") or {}
    return {
        "host": host,
        "address": hv.get("router_backend_address") or hv.get("ansible_host") or host,
        "instances": _plain(hv.get("volta_instances") or []),
        "keys": {str(name): (str(value) if value else "") for name, value in keys.items()}
        if isinstance(keys, Mapping) else {},
        "host_key": str(hv.get("api_gateway_host_key") or ""),
        "generate_keys": bool(hv.get("api_gateway_generate_keys")),
        "tls": bool(hv.get("api_gateway_tls_certificate")),
    }


def _ssh_port(hostvars, host):
    """The port the router host's sshd listens on, as the controller connects to it (ansible_port, default 22)."""
    try:
        return int(_vars(hostvars, host).get("ansible_port") or 22)
    except (TypeError, ValueError):
        return 22


def router_plan(hosts, hostvars, router_host, router_ports=None):
    """The router's services across *hosts* (group volta) and the findings that refuse them (see router_plan.yml)."""
    # Imported on call, not at load (see plugins/filter/engine_build.py).
    from ansible_collections.volta.serving.plugins.plugin_utils._router import router_plan as plan

    ports = _plain(router_ports) if router_ports is not None else {}
    return plan([_host_view(hostvars, str(h)) for h in hosts or []], str(router_host), ports,
                ssh_port=_ssh_port(hostvars, str(router_host)))


def router_listen_ports(groups, hostvars, host):
    """The ports the router of *host* listens on, none unless it is in group volta_router (see
    router_listen_ports.yml): the serving plan's shared.router_ports, which the host's firewall opens."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router import ROUTER_GROUP, SERVING_GROUP, listen_ports

    groups = _plain(groups or {})
    host = str(host)
    if host not in (groups.get(ROUTER_GROUP) or []):
        return []
    ports = _plain(_vars(hostvars, host).get("router_ports"))
    if not isinstance(ports, dict):
        return []  # refused by the router's preflight with its own message
    return listen_ports(router_plan(groups.get(SERVING_GROUP) or [], hostvars, host, ports))


def router_settings_problems(settings, host, ansible_host=None):
    """The router settings' refusals, each ``HOST: VARIABLE: why. Fix: fix.`` (see router_settings_problems.yml)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router_settings import check_settings

    return check_settings(str(host), _plain(settings or {}), {"ansible_host": ansible_host})


def router_probe_targets(services, listen_address):
    """What the router's verify calls: each service's port on the address the router listens on."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router import probe_url

    return [{"name": s["name"], "url": probe_url(listen_address, s["port"])} for s in _plain(services or [])]


def router_backends(plan, host):
    """The backends of *host* in a router plan, each with its service (the drain of playbooks/upgrade.yml)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router import host_backends

    return host_backends(_plain(plan), str(host))


def router_sources(routers, hostvars):
    """The addresses the router hosts connect from; a router host without one fails (see router_sources.yml)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router import router_sources as sources

    views = []
    for host in routers or []:
        hv = _vars(hostvars, str(host))
        facts = hv.get("ansible_facts") or {}
        views.append({
            "host": str(host),
            "source": _plain(hv.get("router_source_address")),
            "ansible_host": hv.get("ansible_host"),
            "facts_ipv4": (facts.get("default_ipv4") or {}).get("address"),
            "facts_ipv6": (facts.get("default_ipv6") or {}).get("address"),
        })
    found = sources(views)
    if found["problems"]:
        raise AnsibleFilterError(" ".join(found["problems"]))
    return found["cidrs"]


def serving_hosts(groups):
    """Every host of the inventory but those only in group volta_router or monitoring (see serving_hosts.yml)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._router import serving_hosts as hosts

    return hosts(_plain(groups))


class FilterModule:
    def filters(self):
        return {"router_plan": router_plan, "router_backends": router_backends, "router_sources": router_sources,
                "serving_hosts": serving_hosts, "router_listen_ports": router_listen_ports,
                "router_settings_problems": router_settings_problems, "router_probe_targets": router_probe_targets}
