#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ray_members
short_description: Wait until every member of a Ray cluster has joined, and name the ones that have not
description:
  - On the head of an instance over several hosts, asks the running Ray cluster for its live nodes (C(ray.nodes())
    through the engine install's own Ray, as the engine account, with the cluster's token) until every member's
    address is among them with its GPUs, or O(timeout) seconds have passed.
  - Fails naming each missing member (host and address) and the nodes that are alive. Reads only.
author:
  - volta.serving contributors (@volta-serving)
options:
  python:
    description: The engine install's Python (its venv has Ray).
    type: path
    required: true
  address:
    description: The cluster's GCS address, C(<head address>:<port>).
    type: str
    required: true
  token_file:
    description: The cluster's token file (RAY_AUTH_TOKEN_PATH).
    type: path
    required: true
  user:
    description: The account Ray runs as (the check connects as it, so nothing it writes is root's).
    type: str
    required: true
  members:
    description: The members as the plan lists them (C(host), C(address)).
    type: list
    elements: dict
    required: true
  gpus:
    description: The GPUs each member gives to Ray.
    type: int
    required: true
  timeout:
    description: Seconds to wait for every member.
    type: int
    default: 120
attributes:
  check_mode:
    description: Reads only; the same in check mode.
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
"""

EXAMPLES = r"""
- name: Wait for every member of the cluster
  volta.serving.ray_members:
    python: /opt/volta/engines/vllm/current/venv/bin/python
    address: 10.0.0.1:6379
    token_file: /etc/volta/secrets/ray-big.token
    user: volta
    members: [{host: server-a, address: 10.0.0.1}, {host: server-c, address: 10.0.0.2}]
    gpus: 4
"""

RETURN = r"""
alive:
  description: The live nodes, C(address) and C(gpus) each.
  type: list
  returned: always
  elements: dict
missing:
  description: The members not among them (or with fewer GPUs), as given.
  type: list
  returned: always
  elements: dict
"""

import json
import time

from ansible.module_utils.basic import AnsibleModule

# Run by the engine install's Python: the live nodes of the cluster, as JSON on the last line.
_PROBE = """
import json, sys
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
nodes = [{"address": n["NodeManagerAddress"], "gpus": n.get("Resources", {}).get("GPU", 0)}
         for n in ray.nodes() if n.get("Alive")]
ray.shutdown()
print(json.dumps(nodes))
"""


def missing(members, alive, gpus):
    """The members whose address is not alive with at least *gpus* GPUs, in member order."""
    have = {node["address"]: node["gpus"] for node in alive}
    return [m for m in members if have.get(m["address"], -1) < gpus]


def probe(module):
    params = module.params
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": params["token_file"], "RAY_USAGE_STATS_ENABLED": "0"}
    argv = ["runuser", "-u", params["user"], "--", "env"] + [f"{k}={v}" for k, v in env.items()]
    argv += [params["python"], "-I", "-c", _PROBE, params["address"]]
    rc, out, err = module.run_command(argv)
    if rc != 0:
        return None, (err or out).strip().splitlines()[-1:] or [f"exit {rc}"]
    try:
        return json.loads(out.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, [f"unreadable answer: {out[-200:]!r}"]


def main():
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "path", "required": True},
            "address": {"type": "str", "required": True},
            "token_file": {"type": "path", "required": True, "no_log": False},
            "user": {"type": "str", "required": True},
            "members": {"type": "list", "elements": "dict", "required": True},
            "gpus": {"type": "int", "required": True},
            "timeout": {"type": "int", "default": 120},
        },
        supports_check_mode=True,
    )
    params = module.params
    deadline = time.monotonic() + params["timeout"]
    alive, error = [], None
    while True:
        found, error = probe(module)
        alive = found if found is not None else alive
        left = missing(params["members"], alive, params["gpus"]) if found is not None else params["members"]
        if found is not None and not left:
            module.exit_json(changed=False, alive=alive, missing=[])
        if time.monotonic() >= deadline:
            break
        time.sleep(2)
    names = ", ".join(f"{m['host']} ({m['address']})" for m in left)
    up = ", ".join(f"{n['address']} ({n['gpus']:g} GPU)" for n in alive) or "none"
    why = f" The last check failed: {error[0]}" if error else ""
    module.fail_json(
        msg=(f"the Ray cluster at {params['address']} lacks {names} after {params['timeout']} s; alive: {up}.{why} "
             f"Why: the instance needs every member's {params['gpus']} GPU(s). Fix: see `journalctl -u "
             "volta-ray.service` on the missing members (their Ray node, the cluster interface, the firewall "
             "between members), then rerun."),
        alive=alive, missing=left)


if __name__ == "__main__":
    main()
