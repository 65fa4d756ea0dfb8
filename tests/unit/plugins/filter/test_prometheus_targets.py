# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volta.serving.prometheus_targets filter, through Ansible's templating."""

from __future__ import annotations

import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import prometheus_targets as plugin


def test_filter_is_registered_under_its_documented_name():
    assert plugin.FilterModule().filters() == {"prometheus_targets": plugin.prometheus_targets}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "prometheus_targets"


def test_filter_through_jinja_one_good_host_one_on_loopback():
    hostvars = {
        "gpu01": {"ansible_host": "192.0.2.10", "exporters_listen_address": "192.0.2.10", "volta_instances": [],
                  "firewall_metrics_cidrs": ["192.0.2.50/32"]},
        "gpu02": {"ansible_host": "192.0.2.11", "volta_instances": []},
    }
    templar = Templar(loader=None, variables={"hosts": ["gpu01", "gpu02"], "hv": hostvars})
    templar.environment.filters["prometheus_targets"] = plugin.prometheus_targets
    result = templar.template(trust_as_template("{{ hosts | prometheus_targets(hv) }}"))
    assert [t["target"] for t in result["exporters"]] == ["192.0.2.10:9100", "192.0.2.10:9402"]
    assert [(p["host"], p["variable"]) for p in result["problems"]] == [("gpu02", "exporters_listen_address")]


def test_scrape_configs_filter_gives_key_files_apart_from_the_configuration():
    from ansible_collections.volta.serving.plugins.filter import prometheus_scrape_configs as scrape

    assert scrape.FilterModule().filters() == {"prometheus_scrape_configs": scrape.prometheus_scrape_configs}
    assert yaml.safe_load(scrape.DOCUMENTATION)["name"] == "prometheus_scrape_configs"
    targets = {"exporters": [], "engines": [{"job": "volta-engine", "host": "gpu01", "instance_name": "chat",
                                             "scheme": "http", "target": "192.0.2.10:8001", "key": "s" * 40}]}
    out = scrape.prometheus_scrape_configs(targets, "/etc/prometheus/volta/keys")
    assert out["key_files"] == [{"path": "/etc/prometheus/volta/keys/gpu01-chat.key", "key": "s" * 40}]
    assert "s" * 40 not in repr(out["scrape_configs"])
