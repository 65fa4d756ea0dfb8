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


def check_services(instances, ctx):
    """Findings for the instances of one host that share a served_model_name (see the module's doc)."""
    host, out = ctx["host"], []
    for name, members in _groups(instances).items():
        first = members[0]
        for other in members[1:]:
            out += _mismatch(host, first, other, name)
            out += _port_mismatch(host, first, other, name)
        if len(members) > 1 and all(m.get("service_port") is None for m in members):
            out.append(_no_service_port(host, members, name))
        out += _key_findings(host, members, name, ctx)
    return out
