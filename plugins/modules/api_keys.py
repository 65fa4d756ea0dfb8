#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the action plugin of the same name (plugins/action/api_keys.py).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: api_keys
short_description: Resolve the API key of every instance of a host and describe the files that carry them
description:
  - The step of the internal role volta.serving._api_keys. Per instance of the serving plan, its key is
    C(api_gateway_keys[key_name]) (its name, or its service's for a replica), else C(api_gateway_host_key), else
    the key generated on the host for its key owner (C(api_gateway_generate_keys)).
  - Reads C(api_gateway_keys), C(api_gateway_host_key), C(api_gateway_generate_keys), C(api_gateway_key_group) and
    the C(secret_env) of C(volta_instances) from the host's variables, as M(volta.serving.serving_plan) reads its
    inputs, so that a caller hands over only the plan's instances.
  - Fails, naming the instances and never a key, when an instance has no usable Bearer token.
  - Its result holds the keys and is never shown (no_log, set by the action itself).
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  instances:
    description: The enabled instances of the serving plan (C(plan.instances)).
    type: list
    elements: dict
    required: true
  secrets_dir:
    description: The plan's C(secrets_dir), where the key files live.
    type: path
    required: true
  service_group:
    description: The group of the key files when C(api_gateway_key_group) is empty (the plan's service account group).
    type: str
  generated:
    description:
      - The results of a slurp of the keys generated on the host, looped over the key owners (C(to_generate)).
      - Without it, and when a key is to be generated, only C(to_generate) is answered.
    type: list
    elements: dict
attributes:
  async:
    support: none
    description: It runs on the controller, at once.
  bypass_host_loop:
    support: none
    description: It reads each host on its own.
  check_mode:
    support: full
    description: In check mode an instance whose key is not generated yet is not refused.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    support: full
    platforms: all
    description: Nothing runs on the host.
"""

EXAMPLES = r"""
- name: Resolve the API key of every instance
  volta.serving.api_keys:
    instances: "{{ plan['instances'] | selectattr('enabled') | list }}"
    secrets_dir: "{{ plan['secrets_dir'] }}"
    service_group: "{{ plan['shared']['service_account']['group'] }}"
  register: __keys
  no_log: true
"""

RETURN = r"""
to_generate:
  description: The key owners whose key is generated on the host.
  returned: always
  type: list
  elements: str
group:
  description: The group of the key files and of the secrets directory.
  returned: always
  type: str
keys:
  description: Instance name -> its key (empty until the generated keys are given).
  returned: always
  type: dict
files:
  description: The M(volta.serving.files) entries of the environment files and key files (secret).
  returned: always
  type: list
  elements: dict
directories:
  description: The secrets directory, as a M(volta.serving.files) entry (none without an instance).
  returned: always
  type: list
  elements: dict
manifest:
  description: The list of the key files the call writes, as M(volta.serving.files) takes it.
  returned: always
  type: dict
"""
