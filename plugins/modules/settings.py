#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the action plugin of the same name (plugins/action/settings.py),
# which runs on the controller and never connects to the host.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: settings
short_description: Check the host's name and every volta.serving setting it sets, before any host changes
description:
  - Refuses an inventory host name outside letters, digits, C(.), C(_) and C(-) (starting with a letter or
    digit), with C(..), or longer than 253 characters, because the name reaches the router's nginx include
    lines and file names.
  - For every variable of the settings registry (C(plugins/plugin_utils/settings_checks/<role>.yml), one entry
    per option of each public role's argument spec) that the host sets in the inventory, its group variables
    or the extra variables, renders it and checks its type against the role's argument spec, then its value
    with the registry's check (an address, a network, a port, an nginx size, a path, a name, a URL, ...).
    The roles' defaults are not checked (they are the collection's own).
  - "Returns every problem of the host, each as C(HOST: VARIABLE: why. Fix: fix.); a secret's value
    (C(no_log) in the argument spec, the key maps) is never shown."
  - Runs on the controller only and never connects to the host. The settings play (C(playbooks/settings.yml))
    runs it first on every host that any play of the collection touches.
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  unknown_variables:
    description:
      - Also refuse the variables with a role's prefix that no role reads (a typo), as preflight does on the
        serving hosts; for the hosts preflight does not run on (a router or a monitoring host only).
      - C(preflight_unknown_variables), else C(volta_unknown_variables), V(warn) makes them warnings.
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
    description: Checks in check mode as in a normal run.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    support: full
    platforms: all
    description: Nothing runs on the host.
seealso:
  - module: volta.serving.serving_plan
"""

EXAMPLES = r"""
- name: Check the host's name and settings
  volta.serving.settings:
    unknown_variables: "{{ inventory_hostname not in (groups | volta.serving.serving_hosts) }}"
"""

RETURN = r"""
problems:
  description: "Every problem of the host, C(HOST: VARIABLE: why. Fix: fix.); empty when there is none."
  returned: always
  type: list
  elements: str
  sample: ['gpu1: firewall_ssh_port: "ssh" is not a whole number. Fix: set firewall_ssh_port to a whole number.']
checked:
  description: The names of the registry variables the host sets, each checked.
  returned: always
  type: list
  elements: str
msg:
  description: The problems, joined, when there is one; else how many settings were checked.
  returned: always
  type: str
"""
