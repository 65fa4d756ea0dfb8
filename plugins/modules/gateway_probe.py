#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gateway_probe
short_description: Call every instance through the gateway, on the host, in one task
description:
  - For each of O(instances), GET C(<url><health_path>) without a key, again after O(delay) seconds up to
    O(retries) more times until it answers 200; then, when the instance has a O(instances[].key), GET
    C(<url>/v1/models) with the header C(Authorization) set to C(Bearer <key>).
  - Reports the HTTP status of each call (V(-1) when no answer came). With O(fail_on_error), fails naming the
    instances that did not answer 200.
  - One task for every instance (the role's verify and report), instead of one request per instance and path.
author:
  - volta.serving contributors (@volta-serving)
options:
  instances:
    description: The instances to call.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The instance's name, for the report.
        type: str
        required: true
      url:
        description: The gateway's URL for the instance, scheme, address and public port (C(http://127.0.0.1:8001)).
        type: str
        required: true
      health_path:
        description: The health path.
        type: str
        default: /health
      key:
        description: The instance's API key; given, /v1/models is called with it. Never returned.
        type: str
  retries:
    description: How many more times /health is called until it answers 200.
    type: int
    default: 0
  delay:
    description: Seconds between two calls of /health.
    type: int
    default: 2
  timeout:
    description: Seconds one call may take.
    type: int
    default: 10
  validate_certs:
    description: Check the gateway's TLS certificate (it is called on the host, by address).
    type: bool
    default: false
  fail_on_error:
    description: Fail when an instance does not answer 200.
    type: bool
    default: false
attributes:
  check_mode:
    description: Calls the gateway in check mode too (read-only GETs).
    support: full
  diff_mode:
    description: Nothing to show.
    support: none
"""

EXAMPLES = r"""
- name: Check /health through the gateway
  volta.serving.gateway_probe:
    instances:
      - name: chat
        url: http://127.0.0.1:8001
    retries: 5
    fail_on_error: true
"""

RETURN = r"""
instances:
  description: Per instance, in order, the status of /health and of /v1/models (V(null) when no key was given).
  type: list
  elements: dict
  returned: always
  sample: [{name: chat, health: 200, models: 200}]
failing:
  description: The instances whose calls did not all answer 200.
  type: list
  elements: str
  returned: always
"""

import http.client
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.volta.serving.plugins.module_utils import _gateway_probe

ARGUMENT_SPEC = {
    "instances": {"type": "list", "elements": "dict", "required": True,
                  "options": {"name": {"type": "str", "required": True}, "url": {"type": "str", "required": True},
                              "health_path": {"type": "str", "default": "/health"},
                              "key": {"type": "str", "no_log": True}}},
    "retries": {"type": "int", "default": 0},
    "delay": {"type": "int", "default": 2},
    "timeout": {"type": "int", "default": 10},
    "validate_certs": {"type": "bool", "default": False},
    "fail_on_error": {"type": "bool", "default": False},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params

    def fetch(url, headers):
        try:
            with open_url(url, headers=headers, timeout=p["timeout"], validate_certs=p["validate_certs"],
                          use_proxy=False) as resp:
                return resp.getcode()
        except HTTPError as err:
            return err.code
        except (URLError, OSError, http.client.HTTPException):  # refused, timed out, TLS: no HTTP answer
            return _gateway_probe.NO_ANSWER

    rows = _gateway_probe.probe(p["instances"], fetch, time.sleep, p["retries"], p["delay"])
    failing = _gateway_probe.failing(rows)
    if failing and p["fail_on_error"]:
        module.fail_json(msg=f"instance(s) {', '.join(failing)} do not answer 200 through the gateway: "
                             + "; ".join(f"{r['name']}: /health {r['health']}" for r in rows if r["name"] in failing)
                             + " (-1: no answer). Fix: look at journalctl -u volta-<instance> and "
                             "/var/log/nginx/volta-<instance>.error.log on the host, then rerun.",
                         instances=rows, failing=failing)
    module.exit_json(changed=False, instances=rows, failing=failing)


if __name__ == "__main__":
    main()
