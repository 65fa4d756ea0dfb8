#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gateway_rotation
short_description: Take one replica of a service out of the gateway's rotation and drain it, or put it back
description:
  - Writes the replica's rotation file (its nginx upstream C(server) line, which the service's upstream
    includes) with the replica in rotation or marked C(down), checks the configuration (C(nginx -t)) and reloads
    nginx gracefully, so that requests in flight finish and new ones go to the other replicas.
  - With O(state=out) and O(drain), then waits until the engine holds no request (its own metrics - running plus
    waiting, twice in a row) or O(drain.timeout) passes. On time-out the replica is put back in rotation and the
    task fails saying how many requests were still in flight; nothing else is changed.
  - A rotation file that does not exist yet means the gateway does not serve the service yet (a first run, where
    the gateway comes after the engines) - nothing is done and RV(served) is false.
  - With O(drain.connections_to) instead of an engine, the wait is on this host's own TCP connections to that
    address (ESTABLISHED in C(/proc/net/tcp) and C(/proc/net/tcp6)). The fleet router (role volta.serving.router)
    drains one host of the fleet this way - after the graceful reload its old nginx workers finish their requests
    and close, and new ones never connect to a server marked C(down).
  - Used by the role volta.serving.engine_service, around the restart of each replica of a service, and by the
    router's C(rotation) entry point, around the upgrade of each host.
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  path:
    description: The replica's rotation file (the serving plan's C(listeners[].backends[].rotation_file)).
    type: path
    required: true
  address:
    description: The engine's address (C(bind_host)).
    type: str
    default: 127.0.0.1
  port:
    description: The engine's port (C(backend_port)).
    type: int
    required: true
  state:
    description: V(in) to serve new requests, V(out) to send them to the other replicas.
    type: str
    choices: [in, out]
    required: true
  drain:
    description:
      - With O(state=out), wait for the requests in flight to finish - the engine's (O(drain.engine) and
        O(drain.metrics_url)), or this host's connections to an address (O(drain.connections_to)).
    type: dict
    suboptions:
      engine:
        description: The engine, which names its in-flight gauges; required with O(drain.metrics_url).
        type: str
        choices: [vllm, onecat, llamacpp]
      metrics_url:
        description: The engine's own C(/metrics) on its backend port.
        type: str
      connections_to:
        description:
          - C(ADDRESS:PORT) (C([ADDRESS]:PORT) for IPv6; a host name is resolved) - wait until this host holds no
            ESTABLISHED TCP connection to it. Exclusive with O(drain.metrics_url).
        type: str
      key_file:
        description: A file with the engine's API key, sent as a Bearer token (llama-server wants it on C(/metrics)).
        type: path
      timeout:
        description: Seconds to wait at most.
        type: int
        default: 600
      interval:
        description: Seconds between two reads of the metrics.
        type: float
        default: 0.5
  reload_command:
    description: How nginx is reloaded (a graceful reload keeps the requests in flight).
    type: list
    elements: str
    default: [systemctl, reload, nginx]
  test_command:
    description: How the configuration is checked before the reload; a failure puts the old file back.
    type: list
    elements: str
    default: [nginx, -t, -q]
attributes:
  check_mode:
    support: full
    description: Reports whether the file would change; nothing is written, reloaded or waited for.
  diff_mode:
    support: none
    description: The change is one line, reported in RV(in_rotation).
"""

EXAMPLES = r"""
- name: Drain flash-next-a before its restart
  volta.serving.gateway_rotation:
    path: /etc/nginx/volta/rotation/8000-flash-next-a.conf
    port: 18001
    state: out
    drain:
      engine: onecat
      metrics_url: http://127.0.0.1:18001/metrics
      timeout: 600

- name: Take gpu01 out of the router's upstream of lab-chat and wait for the router's requests to it
  volta.serving.gateway_rotation:
    path: /etc/nginx/volta-router/rotation/8000-gpu01.conf
    address: 10.0.0.11
    port: 8000
    state: out
    drain:
      connections_to: 10.0.0.11:8000
      timeout: 600
"""

RETURN = r"""
served:
  description: Whether the gateway serves the service (its rotation file exists).
  type: bool
  returned: always
in_rotation:
  description: Whether the replica takes new requests now.
  type: bool
  returned: when served
in_flight_at_start:
  description:
    - The requests the engine held when it was taken out (null when its metrics could not be read), or the
      connections to O(drain.connections_to).
  type: int
  returned: when drained
drained_s:
  description: Seconds the drain took.
  type: float
  returned: when drained
"""

import os
import socket
import tempfile
import time
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.volta.serving.plugins.module_utils._services import established_to, in_flight, server_line

PROC_NET_TCP = ("/proc/net/tcp", "/proc/net/tcp6")


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _write(path, content):
    """Replace the file atomically, keeping its owner, group and mode."""
    info = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".volta-rotation-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.chown(tmp, info.st_uid, info.st_gid)
        os.chmod(tmp, info.st_mode & 0o7777)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _apply(module, path, content, old):
    """Write, check and reload; a refused check or reload puts the old content back and fails the task."""
    _write(path, content)
    for what in ("test_command", "reload_command"):
        rc, out, err = module.run_command(module.params[what])
        if rc != 0:
            _write(path, old)
            module.run_command(module.params["reload_command"])
            module.fail_json(msg=f"{path}: `{' '.join(module.params[what])}` failed (rc {rc}): {(err or out).strip()}. "
                             "The rotation file was put back as it was.")


def _metrics(url, key_file):
    """The engine's requests in flight, or None when its metrics cannot be read (an engine that is down holds none)."""
    headers = {}
    if key_file:
        headers["Authorization"] = "Bearer " + _read(key_file).strip()
    try:
        response = open_url(url, headers=headers, timeout=5, validate_certs=False)
        return response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _target(module, text):
    """(addresses, port) of drain.connections_to; a host name is resolved once."""
    host, sep, port = str(text).rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        module.fail_json(msg=f"drain.connections_to {text!r} is not ADDRESS:PORT. Fix: write it as 10.0.0.11:8000 "
                         "or [2001:db8::11]:8000.")
    try:
        infos = socket.getaddrinfo(host, int(port), proto=socket.IPPROTO_TCP)
    except OSError as exc:
        module.fail_json(msg=f"drain.connections_to {text!r}: {host} does not resolve ({exc}). Fix: use its address.")
    return sorted({info[4][0].split("%")[0] for info in infos}), int(port)


def _connections(target):
    text = ""
    for path in PROC_NET_TCP:
        if os.path.exists(path):
            text += _read(path)
    return established_to(text, target[0], target[1])


def _drain(module, drain):
    """Seconds waited and the count at the start; (None, count) on time-out."""
    start, zeros, first = time.monotonic(), 0, None
    target = _target(module, drain["connections_to"]) if drain.get("connections_to") else None
    while True:
        if target:
            count = _connections(target)
        else:
            text = _metrics(drain["metrics_url"], drain.get("key_file"))
            count = 0 if text is None else in_flight(text, drain["engine"])
        if count is None:
            module.fail_json(msg=f"{drain['metrics_url']} has none of the gauges of requests in flight of engine "
                             f"{drain['engine']}; the replica cannot be drained safely.")
        first = count if first is None else first
        zeros = zeros + 1 if count == 0 else 0
        if zeros >= 2:
            return round(time.monotonic() - start, 1), first, count
        if time.monotonic() - start >= drain["timeout"]:
            return None, first, count
        time.sleep(drain["interval"])


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "address": {"type": "str", "default": "127.0.0.1"},
            "port": {"type": "int", "required": True},
            "state": {"type": "str", "choices": ["in", "out"], "required": True},
            "drain": {"type": "dict", "options": {
                "engine": {"type": "str", "choices": ["vllm", "onecat", "llamacpp"]},
                "metrics_url": {"type": "str"},
                "connections_to": {"type": "str"},
                "key_file": {"type": "path"},
                "timeout": {"type": "int", "default": 600},
                "interval": {"type": "float", "default": 0.5},
            },
                "mutually_exclusive": [["metrics_url", "connections_to"]],
                "required_one_of": [["metrics_url", "connections_to"]],
                "required_together": [["engine", "metrics_url"]]},
            "reload_command": {"type": "list", "elements": "str", "default": ["systemctl", "reload", "nginx"]},
            "test_command": {"type": "list", "elements": "str", "default": ["nginx", "-t", "-q"]},
        },
        supports_check_mode=True,
    )
    params = module.params
    path = params["path"]
    if not os.path.isfile(path):
        module.exit_json(changed=False, served=False)
    wanted_in = params["state"] == "in"
    old, new = _read(path), server_line(params["address"], params["port"], wanted_in)
    changed = old != new
    if module.check_mode or (not changed and wanted_in):
        module.exit_json(changed=changed, served=True, in_rotation=wanted_in if module.check_mode else True)
    if changed:
        _apply(module, path, new, old)
    if wanted_in or not params["drain"]:
        module.exit_json(changed=changed, served=True, in_rotation=wanted_in)
    drained_s, at_start, left = _drain(module, params["drain"])
    if drained_s is None:
        back = server_line(params["address"], params["port"], True)
        _apply(module, path, back, new)
        drain = params["drain"]
        if drain.get("connections_to"):
            what = (f"{left} connection(s) from this host to {drain['connections_to']} still in flight after "
                    f"{drain['timeout']} s of draining. It is back in rotation.")
            fix = "router_drain_timeout"
        else:
            what = (f"{left} request(s) still in flight on {params['address']}:{params['port']} after "
                    f"{drain['timeout']} s of draining ({drain['metrics_url']}). It is back in rotation "
                    "and was not restarted.")
            fix = "engine_service_drain_timeout"
        module.fail_json(
            msg=f"{what} Fix: let the long requests finish, or raise {fix}, then rerun.",
            served=True, in_rotation=True, in_flight_at_start=at_start,
        )
    module.exit_json(changed=changed, served=True, in_rotation=False, in_flight_at_start=at_start,
                     drained_s=drained_s)


if __name__ == "__main__":
    main()
