# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alert rules (roles/prometheus/files/volta-alerts.yml) through the real promtool.

promtool comes from Debian 12's ``prometheus`` package (the one the prometheus role installs on a
Debian monitoring host): ``apt-get download`` into ``$VOLTA_REAL_CACHE`` once, unpacked with
``dpkg-deb -x``. Nothing is installed or started on this machine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import artifacts
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "roles/prometheus/files/volta-alerts.yml"
TESTS = Path(__file__).resolve().parent / "prometheus" / "volta-alerts-test.yml"
# Debian 12 (bookworm) prometheus, the version its archive carries (bookworm-security/updates).
PROMETHEUS_DEB = "2.42.0+ds-5+deb12u1"

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="no apt on this machine")


@pytest.fixture(scope="module")
def promtool():
    dest = artifacts.CACHE / "debs" / f"prometheus-{PROMETHEUS_DEB}"
    tool = dest / "root/usr/bin/promtool"
    with artifacts._locked(f"prometheus-{PROMETHEUS_DEB}"):  # pylint: disable=protected-access
        if not tool.exists():
            (dest / "dl").mkdir(parents=True, exist_ok=True)
            artifacts.run(["sh", "-c", f'cd "{dest / "dl"}" && apt-get download "prometheus={PROMETHEUS_DEB}"'],
                          f"apt-get download prometheus={PROMETHEUS_DEB}", timeout=600)
            (deb,) = (dest / "dl").glob("prometheus_*.deb")
            subprocess.run(["dpkg-deb", "-x", str(deb), str(dest / "root")], check=True)
    return str(tool)


def promtool_run(tool, *args, cwd=None):
    return subprocess.run([tool, *args], capture_output=True, text=True, check=False, cwd=cwd, timeout=120)


def test_promtool_is_debians(promtool):
    assert "2.42.0+ds" in promtool_run(promtool, "--version").stdout


def test_rules_pass_promtool_check(promtool):
    proc = promtool_run(promtool, "check", "rules", str(RULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"SUCCESS: \d+ rules found", proc.stdout)


def test_rule_unit_tests_pass(promtool):
    proc = promtool_run(promtool, "test", "rules", TESTS.name, cwd=TESTS.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_a_wrong_expectation_fails(promtool, tmp_path):
    # The unit tests can fail: the healthy host gpu02 expected to alert makes promtool fail.
    text = TESTS.read_text(encoding="utf-8").replace("../../../roles", str(ROOT / "roles"))
    broken = text.replace("instance: gpu01:8001\n", "instance: gpu02:8001\n", 1)
    assert broken != text
    (tmp_path / "t.yml").write_text(broken, encoding="utf-8")
    proc = promtool_run(promtool, "test", "rules", "t.yml", cwd=tmp_path)
    assert proc.returncode != 0
    assert "alertname: VoltaEngineDown" in proc.stdout + proc.stderr


def test_a_broken_expression_fails_check(promtool, tmp_path):
    bad = RULES.read_text(encoding="utf-8").replace("volta_gpu_retired_pages_pending == 1",
                                                    "volta_gpu_retired_pages_pending ==", 1)
    (tmp_path / "r.yml").write_text(bad, encoding="utf-8")
    proc = promtool_run(promtool, "check", "rules", str(tmp_path / "r.yml"))
    assert proc.returncode != 0
    assert "VoltaGpuRetirementPending" in proc.stdout + proc.stderr or "parse error" in proc.stdout + proc.stderr


def _alerts():
    return [r for g in yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"] for r in g["rules"]]


def test_every_alert_has_a_firing_and_a_silent_case():
    cases = {}
    for test in yaml.safe_load(TESTS.read_text(encoding="utf-8"))["tests"]:
        for case in test["alert_rule_test"]:
            cases.setdefault(case["alertname"], set()).add(bool(case["exp_alerts"]))
    assert {a["alert"]: cases.get(a["alert"]) for a in _alerts()} == {a["alert"]: {True, False} for a in _alerts()}


@pytest.mark.parametrize("alert", _alerts(), ids=lambda a: a["alert"])
def test_every_alert_names_host_severity_and_gpu(alert):
    assert alert["labels"]["severity"] in ("critical", "warning")
    text = alert["annotations"]["summary"] + alert["annotations"]["description"]
    assert "$labels.host" in text
    if "gpu" in alert["annotations"]["summary"].lower() and "$labels.gpu" in text:
        assert "$labels.bus_id" in text


def _render_config(tmp_path, **overrides):
    """roles/prometheus's prometheus.yml for one scrapable host, its rule and key paths under *tmp_path*."""
    from ansible.template import Templar, trust_as_template
    from ansible_collections.volta.serving.plugins.plugin_utils import _monitoring

    role = ROOT / "roles/prometheus"
    variables = {**yaml.safe_load((role / "defaults/main.yml").read_text(encoding="utf-8")),
                 **yaml.safe_load((role / "vars/main.yml").read_text(encoding="utf-8")),
                 "ansible_managed": "Ansible managed", **overrides}
    variables.update(__prometheus_rules=str(tmp_path / "volta-alerts.yml"), __prometheus_key_dir=str(tmp_path))
    hostvars = {"gpu01": {"ansible_host": "192.0.2.10", "exporters_listen_address": "0.0.0.0",  # noqa: S104
                          "api_gateway_metrics_allow": ["192.0.2.50"], "api_gateway_keys": {"chat": "k" * 40},
                          "api_gateway_metrics_key": "m" * 40,  # Prometheus scrapes with the metrics-only key
                          "firewall_metrics_cidrs": ["192.0.2.50/32"],
                          "volta_instances": [{"name": "chat", "port": 8001}]}}
    targets = _monitoring.scrape_targets(["gpu01"], hostvars)
    variables["__prometheus_scrape"] = {"scrape_configs": _monitoring.scrape_configs(targets, str(tmp_path))}
    text = (role / "templates/prometheus.yml.j2").read_text(encoding="utf-8")
    out = tmp_path / "prometheus.yml"
    out.write_text(Templar(loader=None, variables=variables).template(trust_as_template(text)), encoding="utf-8")
    return out


def test_rendered_configuration_passes_promtool_check_config(promtool, tmp_path):
    config = _render_config(tmp_path, prometheus_alertmanagers=["192.0.2.60:9093"])
    # As the role orders it: the rules and the key file exist before the configuration is checked.
    shutil.copy(RULES, tmp_path / "volta-alerts.yml")
    (tmp_path / "gpu01-chat.key").write_text("m" * 40, encoding="utf-8")
    proc = promtool_run(promtool, "check", "config", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr + config.read_text(encoding="utf-8")
    parsed = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert [c["job_name"] for c in parsed["scrape_configs"]] == [
        "prometheus", "volta-node", "volta-gpu", "volta-engine-gpu01-chat"]
    text = config.read_text(encoding="utf-8")
    assert "k" * 40 not in text and "m" * 40 not in text


def test_promtool_check_config_needs_the_key_file_first(promtool, tmp_path):
    # Why the role writes the keys (and the rules) before prometheus.yml: promtool stats them.
    config = _render_config(tmp_path)
    shutil.copy(RULES, tmp_path / "volta-alerts.yml")
    proc = promtool_run(promtool, "check", "config", str(config))
    assert proc.returncode != 0
    assert "gpu01-chat.key" in proc.stdout + proc.stderr


DASHBOARD = ROOT / "roles/prometheus/files/volta-dashboard.json"


def _dashboard_exprs():
    import json

    def walk(items):
        for panel in items:
            yield from (t["expr"] for t in panel.get("targets", []))
            yield from walk(panel.get("panels", []))

    return list(walk(json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]))


def test_dashboard_expressions_parse_with_promtool(promtool, tmp_path):
    # Grafana's variables replaced the way Grafana does at query time; each expression as a recording rule.
    rules = [{"record": f"volta:dashboard_{i}", "expr": e.replace("$__rate_interval", "5m").replace("$host", ".*")
              .replace("$gpu", ".*").replace("$instance_name", ".*")} for i, e in enumerate(_dashboard_exprs())]
    (tmp_path / "d.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}),
                                    encoding="utf-8")
    proc = promtool_run(promtool, "check", "rules", str(tmp_path / "d.yml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(rules)} rules found" in proc.stdout


def test_dashboard_vllm_metrics_exist_in_vllm_0_21_0():
    # vllm/v1/metrics/loggers.py of the real 0.21.0 wheel names each metric; prometheus_client adds
    # _total to counters and _bucket/_sum/_count to histograms.
    loggers = artifacts.member(artifacts.fetch("vllm", "0.21.0"), "vllm/v1/metrics/loggers.py").decode("utf-8")
    defined = set(re.findall(r'"(vllm:[a-z0-9_]+)"', loggers))
    used = {m for e in _dashboard_exprs() for m in re.findall(r"vllm:[a-z0-9_]+", e)}
    assert used
    base = {re.sub(r"_(total|bucket|sum|count)$", "", m) for m in used}
    assert base - defined == set()
