# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: prometheus_scrape_configs
short_description: The scrape_configs of prometheus.yml, and the engines' key files
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - From the output of P(volta.serving.prometheus_targets#filter), the C(scrape_configs) list of
    prometheus.yml - jobs C(volta-node) and C(volta-gpu), and one configuration per engine instance
    (its host's metrics-only key C(api_gateway_metrics_key) as C(authorization.credentials_file), the job
    label set to C(volta-engine)), each target labelled with C(host) and, for engines, C(instance_name).
  - And the key files to write, one per engine. The keys never appear in the configuration.
options:
  _input:
    description: The output of P(volta.serving.prometheus_targets#filter).
    type: dict
    required: true
  key_dir:
    description: The directory of the key files on the monitoring host.
    type: str
    required: true
  ca_file:
    description: A CA file for gateways that serve TLS; empty for the system's CAs.
    type: str
    default: ""
  self_target:
    description: Where Prometheus scrapes itself (job C(prometheus)), C(host:port).
    type: str
    default: localhost:9090
"""

EXAMPLES = r"""
- name: Build the scrape configurations
  ansible.builtin.set_fact:
    __prometheus_scrape: "{{ __prometheus_targets | volta.serving.prometheus_scrape_configs('/etc/prometheus/keys') }}"
  no_log: true  # key_files holds the keys
"""

RETURN = r"""
_value:
  description: The configuration and the key files.
  type: dict
  contains:
    scrape_configs:
      description: The C(scrape_configs) list of prometheus.yml.
      type: list
      elements: dict
    key_files:
      description: C({path, key}) per engine (C(key) is a secret).
      type: list
      elements: dict
"""


def prometheus_scrape_configs(targets, key_dir, ca_file="", self_target="localhost:9090"):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.volta.serving.plugins.plugin_utils import _monitoring

    return {
        "scrape_configs": _monitoring.scrape_configs(targets, key_dir, ca_file, self_target),
        "key_files": [{"path": _monitoring.key_file(key_dir, t), "key": t["key"]} for t in targets["engines"]],
    }


class FilterModule:
    """volta.serving.prometheus_scrape_configs."""

    def filters(self):
        return {"prometheus_scrape_configs": prometheus_scrape_configs}
