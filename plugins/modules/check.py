#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the action plugin of the same name (plugins/action/check.py).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: check
short_description: Assert conditions, rendering the failure message only when one is false
description:
  - Takes the arguments of M(ansible.builtin.assert) and answers as it does, except where O(fail_msg) itself is
    at fault (see there), because a check that passes never renders it.
  - M(ansible.builtin.assert) renders O(fail_msg) before it tests O(that), on every run. This action keeps
    O(fail_msg) as written until a condition is false and renders it then, so a check that passes does not
    pay for a message that names the same problems as its condition.
  - The roles of this collection check their settings and the hosts' state with it on every run, so in a
    rerun where nothing changes it is a part of the controller's CPU per host.
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  that:
    description: The conditions, as for M(ansible.builtin.assert); all must be true.
    type: list
    elements: str
    required: true
  fail_msg:
    description:
      - The message of the failed task, rendered only when a condition is false.
      - A template in it that cannot be rendered fails the task then, and only then. It must render to a string
        or a list of strings, which is also checked only then (M(ansible.builtin.assert) checks it on every run).
    type: raw
    default: Assertion failed
    aliases: [msg]
  success_msg:
    description: The message when every condition is true (rendered before the conditions are tested).
    type: raw
    default: All assertions passed
  quiet:
    description: Print no message when every condition is true.
    type: bool
    default: false
attributes:
  action:
    support: full
    description: Runs on the controller alone.
  async:
    support: none
    description: It runs on the controller, at once.
  bypass_host_loop:
    support: none
    description: It checks each host on its own.
  check_mode:
    support: full
    description: Tests the conditions in check mode as in a normal run.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    support: full
    platforms: all
    description: Nothing runs on the host.
seealso:
  - module: ansible.builtin.assert
"""

EXAMPLES = r"""
- name: Refuse instances without a port
  volta.serving.check:
    that: __unported | length == 0
    fail_msg: "{{ inventory_hostname }}: instance(s) {{ __unported | join(', ') }} have no port"
    quiet: true
  vars:
    __unported: "{{ volta_instances | rejectattr('port', 'defined') | map(attribute='name') | list }}"
"""

RETURN = r"""
msg:
  description: O(success_msg) when every condition is true; else O(fail_msg), rendered.
  returned: always
  type: raw
  sample: "gpu-01: volta_server.gpus is 10, but nvidia-smi lists 8 GPUs"
assertion:
  description: The first condition that was false.
  returned: when a condition is false
  type: str
evaluated_to:
  description: What that condition evaluated to.
  returned: when a condition is false
  type: bool
"""
