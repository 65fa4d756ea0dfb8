# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Replica services: the enabled instances of one host that serve one model behind one public port.

Pure Python, no Ansible imports. An instance with ``service_port`` is a replica of the service named
by its ``served_model_name`` on that host: the gateway listens on ``service_port`` and balances over
every replica (least connections), each replica keeping its own unit, backend port and public port.
The service's API key is ``api_gateway_keys[<served_model_name>]`` (the instance's ``key_name``), so
that every replica accepts the one key its clients send.

``plan_services(entries)`` and ``listeners(entries, services)`` build what the gateway renders: one
listener per public port, each with the backends it balances over; module gateway_rotation reads the
replicas' server lines and in-flight requests with ``server_line``, ``in_flight`` and ``established_to``.
The rules of replica services (same model, one service port, the key by the service's name) are the
controller's: plugin_utils/_rules_serving.py.
"""

from __future__ import annotations

import ipaddress

# The gateway's passive health check of a replica (nginx upstream server parameters): one failed
# connection takes it out for FAIL_TIMEOUT seconds, then one request tries it again.
MAX_FAILS = 1
FAIL_TIMEOUT = 5
ROTATION_DIR = "/etc/nginx/volta/rotation"


def key_name(inst):
    """The name of the instance's key in api_gateway_keys: its service's for a replica, else its own."""
    return inst["served_model_name"] if inst.get("service_port") is not None else inst["name"]


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
