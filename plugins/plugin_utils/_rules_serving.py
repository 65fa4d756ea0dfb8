# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving rules of a host: instance names, ports (public, backend, service) against each other, SSH and
the reserved ports, and the replica services (instances that share a served_model_name).

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE. An instance with ``service_port`` is a replica of the service named by its
``served_model_name`` (module_utils/_services.py plans the service): replicas must be the same model,
revision, engine and context length, share one service port, and take the key by the service's name.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "duplicate-name": (ERROR, False, "two instances with one name (one systemd unit)"),
    "port-invalid": (ERROR, False, "a port outside 1-65535, or a backend port below 1024"),
    "port-collision": (ERROR, False, "two listeners on one port (instances, gateway, SSH)"),
    "replica-mismatch": (ERROR, False, "instances that share a served_model_name but not its model, engine or length"),
    "service-port-mismatch": (ERROR, False, "replicas of one served_model_name with different service ports"),
    "replicas-without-service-port": (WARNING, False, "instances that share a served_model_name on their own ports"),
    "replica-key-name": (ERROR, False, "an api_gateway_keys entry named after a replica (the service's is read)"),
    "service-port-cluster": (ERROR, False, "service_port on an instance over several hosts (its head serves it alone)"),
    "exporter-port-collision": (ERROR, False, "an instance's port that node_exporter or volta-exporter listens on"),
}


def check_ports(instances, ctx):
    host = ctx["host"]
    out = []
    owners = {}
    ssh = ctx["ssh_port"]
    if ssh is not None:
        owners[ssh] = ("SSH (firewall_ssh_port)", None)
    for port, what in sorted(ctx["reserved_ports"].items()):
        owners.setdefault(port, (f"reserved port of {what}", None))
    for inst in instances:
        for field, port, label in (
            ("port", inst["port"], "the gateway's public port"),
            ("backend_port", inst["backend_port"], "the engine's loopback port"),
            ("service_port", inst.get("service_port"), f"the public port of the service {inst['served_model_name']}"),
        ):
            if port is None:
                continue
            if not 1 <= port <= 65535 or (field == "backend_port" and port < 1024):
                out.append(
                    finding(
                        "port-invalid",
                        host,
                        inst["name"],
                        field,
                        f"{field} {port} is not usable"
                        + (" (port + 10000 unless backend_port is set)." if field == "backend_port" else "."),
                        "ports are 1-65535, and the engine runs as an unprivileged user that cannot bind below 1024.",
                        "choose a port below 55536 (so that port + 10000 fits) or set backend_port.",
                    )
                )
                continue
            if not inst["enabled"]:
                continue
            # The replicas of one service share its port: the owner is the service, not the instance.
            who = ("service", inst["served_model_name"]) if field == "service_port" else (inst["name"], field)
            if port in owners and owners[port][1] != who:
                owner = owners[port][0]
                out.append(
                    finding(
                        "port-collision",
                        host,
                        inst["name"],
                        field,
                        f"{field} {port} ({label}) is already taken by {owner}.",
                        "two listeners cannot share a port: one of the services fails to start.",
                        "choose another port; every instance needs a public port and a backend port "
                        "that no other instance, the gateway or SSH uses.",
                    )
                )
            else:
                owners[port] = (label if field == "service_port" else f"{label} of instance {inst['name']}", who)
    return out + check_exporter_ports(instances, ctx)


# The exporters' listeners (roles/exporters; the plan's shared exporters): port setting -> what listens on it.
EXPORTER_PORTS = (("port", "volta-exporter", "exporters_port"),
                  ("node_exporter_port", "node_exporter", "exporters_node_exporter_port"))
# Addresses that take a port on every address of the host (Linux: a dual-stack :: takes IPv4 too).
_EVERY_ADDRESS = ("", "0.0.0.0", "::", "*")  # noqa: S104  compared, never bound


def _same_socket(first, second):
    """Whether listeners on *first* and *second* (addresses, "" = every address) cannot share one port."""
    first, second = ("127.0.0.1" if a == "localhost" else a for a in (str(first or ""), str(second or "")))
    return first in _EVERY_ADDRESS or second in _EVERY_ADDRESS or first == second


def _exporter_listeners(exporters):
    """``[(port, program, variable)]`` of the exporters that listen on this host (shared exporters settings)."""
    out = []
    for key, program, variable in EXPORTER_PORTS:
        port = exporters.get(key)
        if key == "node_exporter_port" and not exporters.get("node_exporter_enabled", True):
            continue
        if (isinstance(port, int) and not isinstance(port, bool)) or str(port).isdigit():
            out.append((int(port), program, variable))
    return out


def check_exporter_ports(instances, ctx):
    """An enabled instance's port (public and service ports on the gateway's address, the backend port on
    loopback) that node_exporter or volta-exporter listens on too: one of the two fails to start."""
    exporters = ctx.get("exporters") or {}
    listen = exporters.get("listen_address", "127.0.0.1")
    taken = _exporter_listeners(exporters)
    out = []
    for inst in instances:
        if not inst["enabled"] or inst.get("cluster_role") == "worker":
            continue
        for field, address, label in (
            ("port", ctx.get("gateway_listen"), "the gateway's public port"),
            ("backend_port", "127.0.0.1", "the engine's loopback port"),
            ("service_port", ctx.get("gateway_listen"), f"the public port of the service {inst['served_model_name']}"),
        ):
            for port, program, variable in taken:
                if inst.get(field) == port and _same_socket(address, listen):
                    out.append(finding(
                        "exporter-port-collision", ctx["host"], inst["name"], field,
                        f"{field} {port} ({label}) is also {program}'s port ({variable}), on {listen or '::'}.",
                        f"two listeners cannot share a port: {program} (roles/exporters) or the "
                        f"{'engine' if field == 'backend_port' else 'gateway'} fails to start, after the hosts "
                        "changed.",
                        f"choose another {field} for {inst['name']}, or move {variable} (or turn node_exporter "
                        "off with exporters_node_exporter_enabled: false).",
                    ))
    return out


# What replicas must share: a client that asks for the model may reach any of them.
SAME_FIELDS = (
    ("model", "model (its path carries the revision)"),
    ("engine", "engine"),
    ("max_model_len", "max_model_len"),
)


def _groups(instances):
    """served_model_name -> the enabled, named instances that serve it, in inventory order."""
    groups = {}
    for inst in instances:
        if inst["enabled"] and inst["name"] and inst.get("engine") and inst.get("served_model_name"):
            groups.setdefault(inst["served_model_name"], []).append(inst)
    return groups


def _mismatch(host, first, other, name):
    out = []
    for field, label in SAME_FIELDS:
        if first.get(field) != other.get(field):
            out.append(
                finding(
                    "replica-mismatch",
                    host,
                    other["name"],
                    field,
                    f"{other['name']} and {first['name']} both serve {name}, but their {label} differ "
                    f"({other.get(field)!r} and {first.get(field)!r}).",
                    "instances that share a served_model_name are replicas of one model: a client that asks "
                    "for it may reach either, and must get the same model with the same limits.",
                    f"give both the same {field}, or give one of them another served_model_name.",
                )
            )
    return out


def _port_mismatch(host, first, other, name):
    if first.get("service_port") == other.get("service_port"):
        return []
    return [
        finding(
            "service-port-mismatch",
            host,
            other["name"],
            "service_port",
            f"{other['name']} and {first['name']} both serve {name}, with service_port "
            f"{other.get('service_port')!r} and {first.get('service_port')!r}.",
            "service_port is the one public port of the model's service: every replica names the same one.",
            f"set the same service_port on every instance that serves {name} (or on none of them: then each "
            "keeps only its own port).",
        )
    ]


def _no_service_port(host, members, name):
    ports = ", ".join(f"{m['name']} {m['port']}" for m in members)
    return finding(
        "replicas-without-service-port",
        host,
        members[1]["name"],
        "service_port",
        f"{', '.join(m['name'] for m in members)} all serve {name}, each on its own port ({ports}).",
        "clients must pick a port themselves, and a restart of one instance drops its requests.",
        f"set the same service_port on each of them: the gateway then serves {name} on that port, balanced over "
        "the replicas, and restarts them one at a time after draining each (their own ports keep working).",
    )


def _key_findings(host, members, name, ctx):
    """A replica's own entry in api_gateway_keys is not read (the service's is); say so rather than ignore it."""
    out = []
    for inst in members:
        if inst.get("service_port") is None or inst["name"] == name or inst["name"] not in ctx["keyed_instances"]:
            continue
        out.append(
            finding(
                "replica-key-name",
                host,
                inst["name"],
                "api_gateway_keys",
                f"api_gateway_keys[{inst['name']}] is set, but {inst['name']} is a replica of the service {name}, "
                f"whose key is api_gateway_keys[{name}].",
                "every replica of a service must accept the one key its clients send, so the key is named after "
                "the service; the instance's own entry would be silently unused.",
                f"rename the entry to {name} (the key of every replica, of the service port and of the replicas' "
                "own ports).",
            )
        )
    return out


def check_cluster_service_port(instances, ctx):
    """service_port on an instance over several hosts: its head alone serves it, and it restarts with its Ray
    cluster, never as one replica of a service drained behind the others."""
    out = []
    for inst in instances:
        cluster = inst.get("cluster")
        if not (inst["enabled"] and cluster and inst.get("service_port") is not None):
            continue
        out.append(finding(
            "service-port-cluster", ctx["host"], inst["name"], "service_port",
            f"{inst['name']} runs over several hosts (cluster.members {', '.join(cluster['members'])}), and "
            f"service_port {inst['service_port']} is set.",
            "an instance over several hosts is served by its head alone and restarts with its whole Ray cluster: "
            "the gateway's service would balance over one replica, never drained, and the members other than the "
            "head have no listener for it.",
            f"remove service_port from {inst['name']}: its clients use port {inst['port']} on {cluster['head']}; "
            "to balance one model over several servers, give each its own instance behind the fleet router "
            "(group volta_router).",
        ))
    return out


def check_services(instances, ctx):
    """Findings for the instances of one host that share a served_model_name (see the module's doc)."""
    host, out = ctx["host"], check_cluster_service_port(instances, ctx)
    for name, members in _groups(instances).items():
        first = members[0]
        for other in members[1:]:
            out += _mismatch(host, first, other, name)
            out += _port_mismatch(host, first, other, name)
        if len(members) > 1 and all(m.get("service_port") is None for m in members):
            out.append(_no_service_port(host, members, name))
        out += _key_findings(host, members, name, ctx)
    return out
