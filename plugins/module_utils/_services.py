# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replica services: the enabled instances of one host that serve one model behind one public port.

Pure Python, no Ansible imports. An instance with ``service_port`` is a replica of the service named
by its ``served_model_name`` on that host: the gateway listens on ``service_port`` and balances over
every replica (least connections), each replica keeping its own unit, backend port and public port.
The service's API key is ``api_gateway_keys[<served_model_name>]`` (the instance's ``key_name``), so
that every replica accepts the one key its clients send.

``check_services(instances, ctx)`` returns the findings (instances that share a served_model_name
must be the same model, revision, engine and context length; one service port; the key by the
service's name); ``plan_services(entries)`` and ``listeners(entries, services)`` build what the
gateway renders: one listener per public port, each with the backends it balances over.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.volta.serving.plugins.module_utils._rules import finding

# What replicas must share: a client that asks for the model may reach any of them.
SAME_FIELDS = (
    ("model", "model (its path carries the revision)"),
    ("engine", "engine"),
    ("max_model_len", "max_model_len"),
)
# The gateway's passive health check of a replica (nginx upstream server parameters): one failed
# connection takes it out for FAIL_TIMEOUT seconds, then one request tries it again.
MAX_FAILS = 1
FAIL_TIMEOUT = 5
ROTATION_DIR = "/etc/nginx/volta/rotation"


def key_name(inst):
    """The name of the instance's key in api_gateway_keys: its service's for a replica, else its own."""
    return inst["served_model_name"] if inst.get("service_port") is not None else inst["name"]


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


def plan_services(entries):
    """One entry per service: the enabled plan entries with a service_port, grouped by served_model_name.

    Sets each entry's ``key_owner`` (the instance whose generated key it uses: its service's first replica),
    ``rotation_file`` (a replica's server line in its service's upstream, else None) and ``drain`` (whether
    engine_service takes it out of rotation before a restart: a replica of a service with another replica).
    """
    for entry in entries:
        entry.update(key_owner=entry["name"], rotation_file=None, drain=False)
    services = {}
    for entry in entries:
        if not entry["enabled"] or entry.get("service_port") is None:
            continue
        service = services.setdefault(
            entry["served_model_name"],
            {"name": entry["served_model_name"], "port": entry["service_port"], "key_name": entry["key_name"],
             "engine": entry["engine"], "health_path": entry["health_path"], "replicas": []},
        )
        service["replicas"].append(entry["name"])
        entry["key_owner"] = service["replicas"][0]
        entry["rotation_file"] = rotation_path(entry["service_port"], entry["name"])
    by_name = {entry["name"]: entry for entry in entries}
    for service in services.values():
        for name in service["replicas"]:
            by_name[name]["drain"] = len(service["replicas"]) > 1
    return list(services.values())


def rotation_path(service_port, instance, rotation_dir=ROTATION_DIR):
    """The file that holds one replica's server line in its service's upstream."""
    return f"{rotation_dir.rstrip('/')}/{service_port}-{instance}.conf"


def server_line(bind_host, backend_port, in_rotation=True):
    """One replica's nginx upstream server line; out of rotation it is marked down (no new request)."""
    address = f"[{bind_host}]" if ":" in bind_host else bind_host
    tail = "down" if not in_rotation else f"max_fails={MAX_FAILS} fail_timeout={FAIL_TIMEOUT}s"
    return f"server {address}:{backend_port} {tail};\n"


def _backend(entry, service_port=None, rotation_dir=ROTATION_DIR):
    return {
        "instance": entry["name"],
        "address": entry["bind_host"],
        "port": entry["backend_port"],
        "rotation_file": rotation_path(service_port, entry["name"], rotation_dir) if service_port else None,
    }


def listeners(entries, services, rotation_dir=ROTATION_DIR):
    """What the gateway serves, one listener per public port, in port order.

    Each enabled instance has its own port (one backend); each service has its port with every replica as
    a backend, each in its own rotation file (so that a drain marks one replica down without touching the
    rest of the configuration). ``key_instance`` names the instance whose resolved key the port checks (the
    replicas of a service all resolve the same one: same key_name, same key_owner).
    """
    by_name = {entry["name"]: entry for entry in entries}
    out = [
        {"port": entry["public_port"], "name": entry["name"], "kind": "instance", "engine": entry["engine"],
         "served_model_name": entry["served_model_name"], "key_name": entry["key_name"],
         "key_instance": entry["name"], "health_path": entry["health_path"], "backends": [_backend(entry)]}
        for entry in entries
        if entry["enabled"]
    ]
    for service in services:
        out.append(
            {"port": service["port"], "name": service["name"], "kind": "service", "engine": service["engine"],
             "served_model_name": service["name"], "key_name": service["key_name"],
             "key_instance": service["replicas"][0], "health_path": service["health_path"],
             "backends": [_backend(by_name[r], service["port"], rotation_dir) for r in service["replicas"]]}
        )
    return sorted(out, key=lambda listener: listener["port"])


def rotation_files(listeners_list):
    """The rotation files of every service listener, each with its replica in rotation (api_gateway writes these)."""
    return [
        {"path": backend["rotation_file"], "content": server_line(backend["address"], backend["port"])}
        for listener in listeners_list
        if listener["kind"] == "service"
        for backend in listener["backends"]
    ]


# The engines' own gauges of the requests they hold, by engine (recorded from the real servers: vLLM's
# vllm/v1/metrics/loggers.py, and llama.cpp's tools/server/server-task.cpp, vendored in llama-cpp-python
# 0.3.36). vLLM serves /metrics without its key; llama-server wants the key there.
IN_FLIGHT_METRICS = {
    "vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "onecat": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
    "llamacpp": ("llamacpp:requests_processing", "llamacpp:requests_deferred"),
}


def in_flight(metrics_text, engine):
    """The requests an engine holds (running + waiting), summed over its samples; None if no gauge is there."""
    names = IN_FLIGHT_METRICS[engine]
    total, seen = 0.0, False
    for raw in str(metrics_text).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name not in names:
            continue
        try:
            total += float(line.rsplit(" ", 1)[-1])
        except ValueError:
            continue
        seen = True
    return int(total) if seen else None


# /proc/net/tcp and /proc/net/tcp6: the state column's value for ESTABLISHED (include/net/tcp_states.h).
TCP_ESTABLISHED = "01"


def _proc_address(hex_address):
    """An address of /proc/net/tcp{,6} (host byte order per 32-bit word, little-endian on x86) as ipaddress."""
    raw = bytes.fromhex(hex_address)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    return address.ipv4_mapped or address if address.version == 6 else address


def established_to(proc_net_tcp, addresses, port):
    """How many ESTABLISHED TCP connections of /proc/net/tcp{,6} text go to one of *addresses* on *port*.

    The router's drain counts these (its nginx workers' connections to one host's gateway): after a graceful
    reload with that server marked down, old workers finish their requests and close, new ones never connect.
    """
    wanted = set()
    for text in addresses:
        address = ipaddress.ip_address(str(text).strip("[]"))
        wanted.add(address.ipv4_mapped or address if address.version == 6 else address)
    count = 0
    for line in str(proc_net_tcp).splitlines():
        fields = line.split()
        if len(fields) < 4 or ":" not in fields[2] or fields[3] != TCP_ESTABLISHED:
            continue
        remote, _sep, remote_port = fields[2].rpartition(":")
        try:
            if int(remote_port, 16) == int(port) and _proc_address(remote) in wanted:
                count += 1
        except ValueError:
            continue
    return count
