# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: prometheus_targets
short_description: The Prometheus scrape targets of the serving hosts, from the inventory
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - For each host given, reads its variables (from O(hostvars)) and returns its node_exporter
    (job C(volta-node), C(exporters_node_exporter_port), default 9100) and volta-exporter (job C(volta-gpu),
    C(exporters_port), default 9402) targets, and one C(volta-engine) target per enabled instance of
    C(volta_instances), the instance's public port on the host's gateway (it serves C(/metrics) with the
    host's metrics-only key C(api_gateway_metrics_key), which opens no inference path; no inference key is
    ever sent on a scrape).
  - The address is C(exporters_listen_address) (or C(api_gateway_listen_address)) when it is one
    address, else C(prometheus_scrape_address), C(ansible_host) or the inventory name.
  - Never fails; what keeps a target from being scraped from another host (exporters or gateway on
    loopback, an empty C(api_gateway_metrics_allow) or C(firewall_metrics_cidrs), a host with instances and
    no C(api_gateway_metrics_key)) is
    returned in RV(_value.problems), each naming the host, the variable and the fix.
options:
  _input:
    description: Inventory hostnames (for example C(groups['volta'])).
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) of the play.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Compute the scrape targets of group volta
  ansible.builtin.set_fact:
    __prometheus_targets: "{{ groups['volta'] | volta.serving.prometheus_targets(hostvars) }}"
  no_log: true  # the engine targets carry the hosts' metrics keys
"""

RETURN = r"""
_value:
  description: The targets and the problems.
  type: dict
  contains:
    exporters:
      description: C({job, host, target}) per exporter, C(target) as C(address:port).
      type: list
      elements: dict
    engines:
      description: C({job, host, instance_name, scheme, target, key}) per engine instance (C(key), the host's
        metrics-only key, is a secret).
      type: list
      elements: dict
    problems:
      description: C({host, variable, message}), one per target that cannot be scraped.
      type: list
      elements: dict
"""


def prometheus_targets(hosts, hostvars):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.volta.serving.plugins.plugin_utils._monitoring import scrape_targets

    return scrape_targets(list(hosts or []), hostvars)


class FilterModule:
    """volta.serving.prometheus_targets."""

    def filters(self):
        return {"prometheus_targets": prometheus_targets}
