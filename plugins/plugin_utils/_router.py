# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet router: one endpoint per service across the hosts of group ``volta``.

Pure Python, no Ansible imports. A host serves a service when one of its enabled instances has a
``service_port`` (``_services``: the instances of one host that share a served_model_name and set
service_port are the replicas of that service; the host's gateway serves it on service_port with the key
``api_gateway_keys[<served_model_name>]``). The router (role volta.serving.router, group ``volta_router``)
puts every host's gateway port of a service into one nginx upstream, each host's server line in its own
rotation file (``_services.rotation_path`` and ``server_line``, as the host's gateway does for its replicas),
and checks the service's key itself, so the key must be the same on every host of the service.

``router_plan(hosts, router_host, router_ports)`` returns the services and the findings (each a message
naming host, field, why and fix; an empty list means the router can be configured). ``serving_hosts`` and
``router_sources`` are the inventory helpers of the playbooks and of the firewall role.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re

from ansible_collections.volta.serving.plugins.module_utils._services import rotation_path
from ansible_collections.volta.serving.plugins.plugin_utils._cidr import check_cidr
from ansible_collections.volta.serving.plugins.plugin_utils._router_settings import check_backend_address

ROUTER_GROUP = "volta_router"
SERVING_GROUP = "volta"
MONITORING_GROUP = "monitoring"
ROTATION_DIR = "/etc/nginx/volta-router/rotation"
# An inventory host name the router writes into a file name or a comment: letters, digits, "_", "-" and
# dots between them (no "/", no "..", no leading dot, nothing nginx reads as syntax).
SAFE_HOST_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]|\.(?=[A-Za-z0-9_-]))*")


def _message(host, field, text, why, fix):
    return f"{host}: field {field}: {text} Why: {why} Fix: {fix}"


def _is_port(value):
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def safe_id(host):
    """The name of *host* in the router's file names: the inventory name when it is safe (SAFE_HOST_RE), else a
    name derived from it that is (letters, digits and a sha256 prefix), so no inventory name reaches a path."""
    host = str(host)
    if SAFE_HOST_RE.fullmatch(host):
        return host
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", host).strip("_")[:32]
    return f"{readable or 'host'}-{_sha256(host)[:12]}"


def _serves_here(inst, host):
    """Whether *host* serves the instance: a multi-host (Ray cluster) instance is served by its head only, the
    first of cluster.members (the workers run Ray nodes, no listener)."""
    cluster = inst.get("cluster")
    if cluster is None:
        return True
    members = cluster.get("members") if isinstance(cluster, dict) else None
    return isinstance(members, list) and len(members) > 0 and members[0] == host


def host_services(instances, host=None):
    """served_model_name -> (port, key name) of the instances *host* serves to the router, in inventory order.

    The same reading as the serving plan (an instance is enabled unless ``enabled: false``; its
    served_model_name defaults to its name): an instance with a service_port, on that port with the service's
    key (``api_gateway_keys[<served_model_name>]``); a multi-host (Ray cluster) instance on its head only (the
    first of cluster.members; the workers have no listener), on its service_port or else its own port, with its
    own key (``api_gateway_keys[<name>]``, as the head's gateway checks it). The host's own preflight checks
    the rest of its shape.
    """
    out = {}
    for inst in instances or []:
        if not isinstance(inst, dict) or inst.get("enabled", True) is False or not inst.get("name"):
            continue
        if host is not None and not _serves_here(inst, host):
            continue
        clustered = inst.get("cluster") is not None and inst.get("service_port") is None
        port = inst.get("port") if clustered else inst.get("service_port")
        if not _is_port(port):
            continue
        name = str(inst.get("served_model_name") or inst["name"])
        out.setdefault(name, (port, str(inst["name"]) if clustered else name))
    return out


def public_ports(instances):
    """Every port the host's own gateway listens on (each enabled instance's port and service port)."""
    ports = set()
    for inst in instances or []:
        if not isinstance(inst, dict) or inst.get("enabled", True) is False:
            continue
        ports.update(p for p in (inst.get("port"), inst.get("service_port")) if _is_port(p))
    return ports


def resolve_key(view, service):
    """(source, key) of the key the host's gateway checks for *service*, as api_gateway resolves it.

    api_gateway_keys[service], else api_gateway_host_key, else a key generated on the host
    (api_gateway_generate_keys, unknown to the controller) or none.
    """
    keys = view.get("keys") or {}
    given = keys.get(service) if isinstance(keys, dict) else None
    if given:
        return f"api_gateway_keys[{service}]", str(given)
    if view.get("host_key"):
        return "api_gateway_host_key", str(view["host_key"])
    if view.get("generate_keys"):
        return "generated", None
    return "none", None


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key_findings(service, members):
    """The router checks the service's key itself: every host of the service must resolve the same one."""
    out = []
    for view, source, _key in members:
        host = view["host"]
        if source == "generated":
            out.append(_message(
                host, f"api_gateway_keys[{service}]",
                f"the key of service {service} is generated on {host} (api_gateway_generate_keys), so the router "
                "cannot know it.",
                "the router checks the key itself and must hold the one key every host of the service accepts.",
                f"set api_gateway_keys[{service}] (Ansible Vault) for {host}, the same on every host that serves "
                f"{service}.",
            ))
        elif source == "none":
            out.append(_message(
                host, f"api_gateway_keys[{service}]",
                f"{host} serves {service} but has no key for it (neither api_gateway_keys[{service}] nor "
                "api_gateway_host_key).",
                "the router checks the service's key and passes it on to the host's gateway, which checks it again.",
                f"set api_gateway_keys[{service}] (Ansible Vault) for {host}, the same on every host that serves "
                f"{service}.",
            ))
    known = [(view["host"], source, _sha256(key)) for view, source, key in members if key is not None]
    digests = []
    for _host, _source, digest in known:
        if digest not in digests:
            digests.append(digest)
    if len(digests) > 1:
        groups = "; ".join(
            " and ".join(f"{host} ({source})" for host, source, d in known if d == digest)
            + f" use key #{number}"
            for number, digest in enumerate(digests, 1)
        )
        first = known[0][0]
        odd = next(host for host, _source, digest in known if digest != digests[0])
        out.append(_message(
            odd, f"api_gateway_keys[{service}]",
            f"the hosts of service {service} do not resolve the same key (by sha256; keys are not shown): {groups}.",
            "the router checks one key per service and passes it to whichever host serves the request; a host "
            "with another key would answer 401 to the router's clients.",
            f"give every host of {service} the same api_gateway_keys[{service}] (for example in "
            f"group_vars/volta), as {first} has it; a host that relies on api_gateway_host_key needs the same "
            "value there.",
        ))
    return out


def _ssh_findings(router_host, services, ssh_port):
    """A router port that is the port the controller reaches the router host's sshd on (ansible_port)."""
    return [
        _message(
            router_host, f"router_ports[{service['name']}]",
            f"router port {service['port']} of service {service['name']} is the port {router_host}'s sshd listens "
            "on (ansible_port, default 22).",
            "nginx and sshd cannot both listen on it: nginx would fail to start, or take SSH away from the "
            "controller.",
            f"give {service['name']} another port in router_ports on {router_host}, for example "
            f"router_ports: {{{service['name']}: 8000}}.",
        )
        for service in services.values()
        if service["port"] is not None and service["port"] == ssh_port
    ]


def _shape_finding(router_host, router_ports):
    if isinstance(router_ports, dict):
        return []
    return [_message(
        router_host, "router_ports",
        f"router_ports is a {type(router_ports).__name__} ({router_ports!r}), not a mapping of service names to ports.",
        "a list is not read at all: every service would silently stay on its hosts' service_port.",
        "write router_ports as a mapping served_model_name -> port, for example router_ports: {lab-chat: 9000}.",
    )]


def _port_findings(router_host, services, router_ports, own_ports):
    out = []
    for name, port in sorted((router_ports or {}).items(), key=lambda item: str(item[0])):
        if name not in services:
            out.append(_message(
                router_host, f"router_ports[{name}]",
                f"router_ports names {name}, which no host of group volta serves with a service_port "
                f"(services: {', '.join(services) or 'none'}).",
                "a misspelt service name would silently leave the service on its default port.",
                "use a served_model_name of an instance with a service_port, or remove the entry.",
            ))
        elif not _is_port(port):
            out.append(_message(
                router_host, f"router_ports[{name}]", f"{port!r} is not a TCP port.",
                "the router listens on it.", "give a whole number from 1 to 65535.",
            ))
    by_port = {}
    for service in services.values():
        if service["port"] is not None:
            by_port.setdefault(service["port"], []).append(service["name"])
    for port, names in sorted(by_port.items()):
        if len(names) > 1:
            out.append(_message(
                router_host, f"router_ports[{names[1]}]",
                f"services {' and '.join(names)} would both listen on router port {port}.",
                "one port can serve one service only.",
                f"give {names[1]} another port in router_ports (for example router_ports: {{{names[1]}: {port + 1}}}).",
            ))
        if port in own_ports:
            out.append(_message(
                router_host, f"router_ports[{names[0]}]",
                f"router port {port} of service {names[0]} is also a port of {router_host}'s own gateway "
                "(the host is in group volta too).",
                "the router and the host's gateway cannot both listen on one port.",
                f"give {names[0]} another port in router_ports on {router_host}.",
            ))
    return out


def _address_finding(view):
    address = view.get("address")
    text = address[1:-1] if isinstance(address, str) and address.startswith("[") and address.endswith("]") else address
    problem = check_backend_address(text)
    if problem is None:
        return None
    return _message(
        view["host"], "router_backend_address",
        f"{address!r} is not an address or host name the router can connect to ({problem[0]}).",
        "the router's upstream names each host by the address it connects to (router_backend_address, "
        "else ansible_host, else the inventory name).",
        f"set router_backend_address for {view['host']} to the address of its gateway as the router reaches it "
        "(an IP address or a host name, no port).",
    )


def _name_finding(host):
    """An inventory host name that is unsafe in the router's include lines, file names and comments."""
    if SAFE_HOST_RE.fullmatch(str(host)) and len(str(host)) <= 253:
        return None
    return _message(
        host, "inventory_hostname",
        f"the inventory name {str(host)!r} holds characters other than letters, digits, '_', '-' and single dots "
        "between them.",
        "the router writes each host's name into its upstream's include lines and rotation file names (nginx would "
        "read ';', spaces or '#' as configuration, '/' and '..' would leave the rotation directory); the serving "
        "plays skip such a host, yet the router would route to it.",
        "rename the host in the inventory (for example gpu-b) and keep its address in ansible_host.",
    )


def _tls_finding(view):
    """The router talks plain HTTP to the hosts' gateways: a host that serves TLS cannot be its backend."""
    if not view.get("tls"):
        return None
    return _message(
        view["host"], "api_gateway_tls_certificate",
        f"{view['host']} serves its gateway over TLS, but the router connects to the hosts' gateways over plain "
        "HTTP.",
        "every request the router passed to it would fail (nginx answers plain HTTP on a TLS port with 400).",
        f"leave the TLS settings off {view['host']} behind the router (the router and the hosts on a private "
        "network), or take it out of the services the router serves.",
    )


def router_plan(hosts, router_host, router_ports=None, rotation_dir=ROTATION_DIR, ssh_port=22):
    """The router's services and the findings that refuse it.

    *hosts*: one view per host of group volta, in inventory order: ``{"host", "address", "instances", "keys",
    "host_key", "generate_keys", "tls"}`` (the filter router_plan builds them from hostvars). *ssh_port*: the port
    the router host's sshd listens on (its ansible_port). Returns ``{"services": [{"kind": "service", "name",
    "port", "key", "key_field", "backends": [{"host", "id", "address", "port", "rotation_file"}]}], "findings":
    [...]}``:
    each service is shaped as a service listener of ``_services.listeners``, so ``_services.rotation_files``
    writes its server lines; a rotation file is named by the host's ``safe_id``, never its raw name. A
    multi-host instance has its head as its one backend. A service's key is None while findings refuse it.
    """
    findings, members, own_ports, key_names = [], {}, set(), {}
    for view in hosts:
        if view["host"] == router_host:
            own_ports = public_ports(view.get("instances"))
        for service, (port, key_name) in host_services(view.get("instances"), view["host"]).items():
            source, key = resolve_key(view, key_name)
            members.setdefault(service, []).append((view, port, source, key))
            key_names.setdefault(service, key_name)
    services = {}
    findings += _shape_finding(router_host, router_ports if router_ports is not None else {})
    router_ports = router_ports if isinstance(router_ports, dict) else {}
    for name, entries in members.items():
        for view, _port, _source, _key in entries:
            for problem in (_name_finding(view["host"]), _address_finding(view), _tls_finding(view)):
                if problem and problem not in findings:
                    findings.append(problem)
        ports = sorted({port for _view, port, _source, _key in entries})
        port = router_ports.get(name)
        if port is None and len(ports) == 1:
            port = ports[0]
        elif port is None:
            findings.append(_message(
                router_host, f"router_ports[{name}]",
                f"the hosts of service {name} serve it on different service ports ({', '.join(map(str, ports))}), "
                "so the router's port for it is not clear.",
                "the router listens on one port per service (by default the hosts' service_port).",
                f"set router_ports: {{{name}: PORT}} for {router_host}, or give every host the same service_port.",
            ))
        key_problems = _key_findings(key_names[name], [(view, source, key) for view, _port, source, key in entries])
        findings += key_problems
        listen = port if _is_port(port) else None
        services[name] = {
            "kind": "service",
            "name": name,
            "port": listen,
            "key": None if key_problems else entries[0][3],
            "key_field": f"api_gateway_keys[{key_names[name]}]",
            "backends": [
                {"host": view["host"], "id": safe_id(view["host"]), "address": str(view.get("address")).strip("[]"),
                 "port": backend_port, "rotation_file": rotation_path(listen, safe_id(view["host"]), rotation_dir)}
                for view, backend_port, _source, _key in entries
            ],
        }
    findings += _port_findings(router_host, services, router_ports, own_ports)
    findings += _ssh_findings(router_host, services, ssh_port)
    return {"services": sorted(services.values(), key=lambda s: (s["port"] or 0, s["name"])), "findings": findings}


def probe_url(listen_address, port):
    """The URL the router's verify and report call: the address it listens on (loopback when it listens on every
    address), so a router bound to one address is checked where it answers."""
    address = str(listen_address or "")
    if address in ("", "0.0.0.0"):  # noqa: S104  an nginx listen address, compared, never bound here
        address = "127.0.0.1"
    elif address == "::":
        address = "::1"
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}"


def listen_ports(plan):
    """The ports a router plan listens on (each service's valid port), sorted: what the firewall of a host of
    group volta that runs the router opens to its API clients."""
    return sorted({s["port"] for s in plan["services"] if _is_port(s["port"])})


def host_backends(plan, host):
    """The backends of *host* in a router plan, each with its service's name (the drain of an upgrade)."""
    return [
        {**backend, "service": service["name"]}
        for service in plan["services"]
        for backend in service["backends"]
        if backend["host"] == host
    ]


def serving_hosts(groups):
    """Every host but those only in group volta_router or monitoring: the hosts the serving playbooks run on.

    A router VM and a monitoring host (playbooks/monitoring.yml) have no GPU, no engine and no instance.
    """
    everyone = list((groups or {}).get("all") or [])
    serving = set((groups or {}).get(SERVING_GROUP) or [])
    others = {h for group in (ROUTER_GROUP, MONITORING_GROUP) for h in (groups or {}).get(group) or []}
    return [h for h in everyone if h in serving or h not in others]


def router_sources(routers):
    """The networks (one address each) the router hosts connect from, and a problem per router without one.

    *routers*: ``[{"host", "source", "ansible_host", "facts_ipv4", "facts_ipv6"}]``. The address is
    router_source_address, else ansible_host when it is an IP address, else the addresses of the host's
    gathered facts (default_ipv4, default_ipv6). Returns ``{"cidrs": [...], "problems": [...]}``.
    """
    cidrs, problems = [], []
    for router in routers:
        found = []
        if router.get("source"):
            given = router["source"] if isinstance(router["source"], list) else [router["source"]]
            found = [str(a) for a in given]
        else:
            try:
                found = [str(ipaddress.ip_address(str(router.get("ansible_host"))))]
            except ValueError:
                found = []
            if not found:
                found = [str(a) for a in (router.get("facts_ipv4"), router.get("facts_ipv6")) if a]
        if not found:
            problems.append(_message(
                router["host"], "router_source_address",
                f"the address that router host {router['host']} connects from is not known (no router_source_address, "
                "ansible_host is not an IP address, and no facts were gathered).",
                "the hosts' firewalls let the router's addresses in on the service ports, and nothing else.",
                f"set router_source_address for {router['host']} (an address or a list of them), or set "
                "firewall_router_cidrs on the hosts of group volta.",
            ))
        for address in found:
            network, problem = check_cidr(address)
            if network is not None:
                cidrs.append(network.with_prefixlen)
                continue
            problems.append(_message(
                router["host"], "router_source_address", f"{address!r} is not an IP address or network: "
                f"{problem['why']}.", "the hosts' firewalls let exactly these addresses in on the service ports "
                "(a network with host bits set, such as 10.0.0.2/8, was widened to 10.0.0.0/8).",
                f"{problem['fix']}; router_source_address of {router['host']} is its IP address (or a list of them).",
            ))
    return {"cidrs": list(dict.fromkeys(cidrs)), "problems": problems}
