#!/usr/bin/env python3
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real Prometheus scraping with the configuration the prometheus role writes.

    tests/device/prometheus_scrape.py PROMETHEUS_BINARY OUTDIR

Run on a lent machine (never on the controller, where no Prometheus may run): the binary is Debian
12's /usr/bin/prometheus 2.42.0+ds-5+deb12u1 (the package the role installs), carried there. The
scrape configuration comes from plugin_utils/_monitoring.py (scrape_targets, scrape_configs) for
one host with two engine instances; the rules are roles/prometheus/files/volta-alerts.yml.

The scraped endpoints are stand-ins served here on 127.0.0.1: a volta-exporter page (our own
exporter's text format, metric names of the contract, with one GPU missing) and two gateway ports
that answer /metrics only with "Authorization: Bearer <key>" like api_gateway's nginx (401
otherwise); the key of one instance is wrong on purpose. Checked: the keys reach the gateway from
the credentials files, up{job="volta-engine"} is 1 with the right key and 0 with the wrong one (the
job label set by relabelling), the series carry host and instance_name, the rules are loaded and
VoltaGpuMissing is pending on the scraped data. Prints one JSON object; exit 1 when a check fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.volta.serving.plugins.module_utils import _monitoring  # noqa: E402

EXPORTER_PAGE = (
    "volta_gpu_exporter_nvml_up 1\nvolta_gpu_count 3\nvolta_gpu_expected_count 4\nvolta_gpu_pci_devices 4\n"
    'volta_gpu_temperature_celsius{gpu="0",bus_id="00000000:1A:00.0"} 41\n'
)
ENGINE_PAGE = "vllm:num_requests_running 0\n"
SEEN = {}


def serve(page, key=None, name=""):
    """An HTTP server on 127.0.0.1 answering /metrics with *page* (only with the Bearer *key* if given)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            auth = self.headers.get("Authorization", "")
            SEEN.setdefault(name, []).append(auth == f"Bearer {key}" if key else None)
            if key and auth != f"Bearer {key}":
                self.send_response(401)
                self.end_headers()
                return
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def api(path, **query):
    url = f"http://127.0.0.1:19090{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)


def configure(out):
    exporter = serve(EXPORTER_PAGE)
    chat, bad = serve(ENGINE_PAGE, "c" * 40, "chat"), serve(ENGINE_PAGE, "b" * 40, "bad")
    hostvars = {"gpu01": {
        "prometheus_scrape_address": "127.0.0.1", "exporters_listen_address": "0.0.0.0",  # noqa: S104
        "exporters_port": exporter, "exporters_node_exporter_enabled": False, "firewall_enabled": False,
        "api_gateway_metrics_allow": ["127.0.0.1"], "api_gateway_keys": {"chat": "c" * 40, "bad": "x" * 40},
        "volta_instances": [{"name": "chat", "port": chat}, {"name": "bad", "port": bad}]}}
    targets = _monitoring.scrape_targets(["gpu01"], hostvars)
    assert targets["problems"] == [], targets["problems"]
    (out / "keys").mkdir(parents=True, exist_ok=True)
    for target in targets["engines"]:
        Path(_monitoring.key_file(str(out / "keys"), target)).write_text(target["key"], encoding="utf-8")
    shutil.copy(ROOT / "roles/prometheus/files/volta-alerts.yml", out / "volta-alerts.yml")
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(out / "volta-alerts.yml")],
              "scrape_configs": _monitoring.scrape_configs(targets, str(out / "keys"), self_target="127.0.0.1:19090")}
    (out / "prometheus.yml").write_text(json.dumps(config, indent=2), encoding="utf-8")


def wait_ready(proc):
    for _attempt in range(60):
        if proc.poll() is not None:
            raise SystemExit(f"prometheus exited {proc.returncode}")
        try:
            with urllib.request.urlopen("http://127.0.0.1:19090/-/ready", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("prometheus not ready in 30 s")


def observe():
    up = {(r["metric"]["job"], r["metric"].get("instance_name", "")): r["value"][1]
          for r in api("/api/v1/query", query="up")["data"]["result"]}
    engine = api("/api/v1/query", query='vllm:num_requests_running{job="volta-engine"}')["data"]["result"]
    alerts = api("/api/v1/query", query="ALERTS")["data"]["result"]
    rules = [r["name"] for g in api("/api/v1/rules", type="alert")["data"]["groups"] for r in g["rules"]]
    return {
        "up": {f"{j}/{i}" if i else j: v for (j, i), v in sorted(up.items())},
        "engine_series_labels": sorted(sorted(r["metric"]) for r in engine)[0] if engine else [],
        "alerts": sorted((a["metric"]["alertname"], a["metric"]["alertstate"]) for a in alerts),
        "rules_loaded": len(rules),
        "key_sent_right": {k: sorted(set(v), key=str) for k, v in SEEN.items()},
    }


def main(binary, out):
    out = Path(out)
    configure(out)
    log = open(out / "prometheus.log", "w", encoding="utf-8")
    proc = subprocess.Popen([binary, f"--config.file={out / 'prometheus.yml'}", f"--storage.tsdb.path={out / 'data'}",
                             "--web.listen-address=127.0.0.1:19090"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc)
        time.sleep(8)
        seen = observe()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    checks = {
        "engine_up_with_key": seen["up"].get("volta-engine/chat") == "1",
        "engine_down_with_wrong_key": seen["up"].get("volta-engine/bad") == "0",
        "exporter_up": seen["up"].get("volta-gpu") == "1",
        "labels": {"host", "instance_name", "job"} <= set(seen["engine_series_labels"]),
        "rules_loaded": seen["rules_loaded"] == 14,
        "gpu_missing_pending": ("VoltaGpuMissing", "pending") in [tuple(a) for a in seen["alerts"]],
        "keys_from_files": (seen["key_sent_right"].get("chat") == [True]
                            and seen["key_sent_right"].get("bad") == [False]),
    }
    result = {"seen": seen, "checks": checks, "ok": all(checks.values())}
    print(json.dumps(result, indent=2, default=list))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
