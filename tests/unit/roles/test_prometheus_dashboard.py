# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/prometheus/files: the Grafana dashboard and the alert rules name only metrics that exist.

Metrics are the exporter contract's (plugin_utils/_monitoring.CONTRACT_METRICS), node_exporter's
(``node_``), vLLM's (``vllm:``) or Prometheus's own ``up``; every datasource is the dashboard's
``datasource`` template variable. tests/real/test_prometheus_rules.py parses every expression with
the real promtool and checks the ``vllm:`` names against the real vLLM release.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils._monitoring import CONTRACT_METRICS

FILES = Path(__file__).resolve().parents[3] / "roles/prometheus/files"
DASHBOARD = json.loads((FILES / "volta-dashboard.json").read_text(encoding="utf-8"))
RULES = yaml.safe_load((FILES / "volta-alerts.yml").read_text(encoding="utf-8"))
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}


def metric_names(expr):
    """The metric names an expression reads (label matchers, ranges, groupings and functions left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = re.findall(r"(?<![\w:.$])([A-Za-z_:][\w:]*)\b(?!\s*\()", text)
    return {n for n in names if n not in KEYWORDS}


def panels(items):
    for panel in items:
        yield panel
        yield from panels(panel.get("panels", []))


def exprs():
    return [(p["title"], t["expr"]) for p in panels(DASHBOARD["panels"]) for t in p.get("targets", [])]


def known(name):
    return name in CONTRACT_METRICS or name == "up" or name.startswith(("node_", "vllm:"))


def test_metric_names_are_read_from_expressions():
    assert metric_names('sum by (le, gpu) (rate(vllm:x_bucket{a="b{c}"}[5m])) / on(gpu) node_y offset 5m') == {
        "vllm:x_bucket", "node_y"}
    assert metric_names("volta_gpu_count < volta_gpu_expected_count or up == 0") == {
        "volta_gpu_count", "volta_gpu_expected_count", "up"}


@pytest.mark.parametrize(("title", "expr"), exprs(), ids=[t for t, _e in exprs()])
def test_dashboard_expressions_name_known_metrics_only(title, expr):
    names = metric_names(expr)
    assert names, f"{title}: no metric in {expr}"
    assert {n for n in names if not known(n)} == set(), title


def test_a_metric_outside_the_contract_is_caught():
    assert not known("volta_gpu_fan_speed_ratio")
    assert not known("DCGM_FI_DEV_GPU_UTIL")


def test_every_contract_gpu_metric_is_on_the_dashboard():
    shown = set().union(*(metric_names(e) for _t, e in exprs()))
    assert CONTRACT_METRICS - shown <= {"volta_gpu_info"}  # volta_gpu_info feeds the gpu variable


def test_every_datasource_is_the_template_variable():
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for panel in panels(DASHBOARD["panels"]):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert all(t["datasource"] == panel["datasource"] for t in panel["targets"]), panel["title"]
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, var["name"]


def test_gpu_panels_are_per_host_and_name_the_bus_id():
    (row,) = [p for p in DASHBOARD["panels"] if p["type"] == "row" and p.get("repeat") == "host"]
    assert "$host" in row["title"]
    for title, expr in exprs():
        if "volta_gpu_" in expr:
            assert 'host=~"$host"' in expr, title


@pytest.mark.parametrize("rule", [r for g in RULES["groups"] for r in g["rules"]], ids=lambda r: r["alert"])
def test_alert_rules_name_known_metrics_only(rule):
    names = metric_names(rule["expr"])
    assert names and {n for n in names if not known(n) or n.startswith(("node_", "vllm:"))} == set()
