"""Verify the monitoring chain against real state: the distribution's Prometheus on the monitoring
host scrapes the volta host's node_exporter and volta-exporter (real nvidia-ml-py on the lab's NVML
stand-in) and its engine through the gateway with the metrics-only key (which opens no inference path),
and an uncorrectable ECC error written into the stand-in's state fires the alert.

Expected values come from the scenario (molecule.yml: host names, groups, gpu_count; prepare.yml:
the GPU profile of the stand-in's state) and from tests/lab/gpu-sim/profiles.json, not from the roles.
Prometheus listens on loopback (the role's default), so its HTTP API is asked inside the monitoring
container.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

HERE = Path(__file__).resolve().parents[1]
SCENARIO = yaml.safe_load((HERE / "molecule.yml").read_text())
V100, PROM = (p["name"] for p in SCENARIO["platforms"])
PROFILE = SCENARIO["platforms"][0]["env"]["VOLTA_GPU_SIM_PROFILE"]
_PROFILE = json.loads((HERE.parents[1] / "tests/lab/gpu-sim/profiles.json").read_text())["profiles"][PROFILE]
GPUS = [{**_PROFILE["gpu_defaults"], **gpu} for gpu in _PROFILE["gpus"]]
EXPECTED = SCENARIO["provisioner"]["inventory"]["group_vars"]["volta"]["volta_server"]["gpu_count"]
STATE_TOOL = ["python3", "/opt/volta-lab/tests/lab/nvml-sim/nvml_state.py", "/var/lib/volta-lab/nvml-sim/state",
              "--profile", PROFILE]
API = "http://127.0.0.1:9090"
VOLTA_VARS = SCENARIO["provisioner"]["inventory"]["group_vars"]["volta"]
INSTANCE = VOLTA_VARS["volta_instances"][0]
KEY = VOLTA_VARS["api_gateway_keys"][INSTANCE["name"]]
METRICS_KEY = VOLTA_VARS["api_gateway_metrics_key"]
# Run in a container: one GET described by JSON on stdin (the key never on a command line); prints the status.
CALL = r"""
import http.client, json, sys
spec = json.load(sys.stdin)
headers = {"Authorization": "Bearer " + spec["key"]} if spec.get("key") else {}
conn = http.client.HTTPConnection(spec["host"], spec["port"], timeout=10)
conn.request("GET", spec["path"], headers=headers)
print(json.dumps({"status": conn.getresponse().status}))
"""
# Whether the file argv[1] holds the text on stdin (the key files are compared without printing a key).
SAME_FILE = r"""
import sys
print("same" if open(sys.argv[1]).read().strip() == sys.stdin.read().strip() else "different")
"""
PORT_OPEN = r"""
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("open")
except OSError:
    print("closed")
"""
# The wait for a scrape (2s) plus a rule evaluation (2s) with margin.
WAIT = 40
ECC_ALERT = "VoltaGpuUncorrectableEcc"
QUIET_ALERTS = ("VoltaGpuMissing", "VoltaGpuRetirementPending", "VoltaGpuNvmlDown", "VoltaGpuExporterDown")

GET = r"""
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as resp:
    print(json.dumps({"status": resp.status, "body": resp.read().decode()}))
"""


def docker(*argv, check=True, stdin=None):
    proc = subprocess.run(["docker", *argv], input=stdin, capture_output=True, text=True, timeout=120, check=False)
    if check:
        assert proc.returncode == 0, f"docker {' '.join(argv)}: {proc.stderr}"
    return proc


def api(path):
    """GET Prometheus's API inside the monitoring container; the decoded JSON answer."""
    out = json.loads(docker("exec", PROM, "python3", "-c", GET, API + path).stdout)
    assert out["status"] == 200, out
    answer = json.loads(out["body"])
    assert answer["status"] == "success", answer
    return answer["data"]


def address(container):
    out = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container).stdout
    return out.split()[0]


def wait_for(what, probe, seconds=WAIT):
    """Poll *probe* until it returns a truthy value; fail naming *what* and the last value seen."""
    deadline, last = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(1)
    pytest.fail(f"{what} not within {seconds} s; last answer: {last!r}")


def query(expr):
    return api("/api/v1/query?query=" + quote(expr, safe=""))["result"]


def alerts(name):
    return [a for a in api("/api/v1/alerts")["alerts"] if a["labels"].get("alertname") == name]


def set_state(*settings):
    argv = list(STATE_TOOL)
    for setting in settings:
        argv += ["--set", setting]
    docker("exec", V100, *argv)


@pytest.fixture(scope="module")
def healthy_gpus():
    """The stand-in's healthy state (prepare.yml's), and again after the module (the verifier can rerun)."""
    set_state()
    yield
    set_state()


def test_prometheus_is_the_distributions_and_ready():
    package = docker("exec", PROM, "dpkg-query", "-W", "-f", "${Status} ${Version}", "prometheus").stdout
    assert package.startswith("install ok installed"), package
    assert docker("exec", PROM, "systemctl", "is-active", "prometheus").stdout.strip() == "active"
    assert api("/api/v1/status/buildinfo")["version"] in package
    names = [r["name"] for g in api("/api/v1/rules?type=alert")["groups"] for r in g["rules"]]
    assert ECC_ALERT in names and all(n in names for n in QUIET_ALERTS), names


def test_exporters_of_the_volta_host_are_up():
    lab = address(V100)

    def scraped():
        targets = [t for t in api("/api/v1/targets?state=active")["activeTargets"]
                   if t["labels"].get("host") == V100]
        jobs = {t["labels"]["job"]: t for t in targets}
        return jobs if all(jobs.get(j, {}).get("health") == "up" for j in ("volta-node", "volta-gpu")) else None

    jobs = wait_for("volta-node and volta-gpu targets up", scraped)
    assert jobs["volta-node"]["scrapeUrl"] == f"http://{lab}:9100/metrics"
    assert jobs["volta-gpu"]["scrapeUrl"] == f"http://{lab}:9402/metrics"


def test_the_engine_is_scraped_through_its_gateway_with_the_metrics_only_key():
    lab = address(V100)

    def scraped():
        targets = [t for t in api("/api/v1/targets?state=active")["activeTargets"]
                   if t["labels"].get("host") == V100 and t["labels"]["job"] == "volta-engine"]
        return targets if targets and all(t["health"] == "up" for t in targets) else None

    (target,) = wait_for("the volta-engine target up", scraped, seconds=90)
    # The gateway listens on the lab address only (api_gateway_listen_address), where it is scraped.
    assert target["scrapeUrl"] == f"http://{lab}:{INSTANCE['port']}/metrics"
    assert target["labels"]["instance_name"] == INSTANCE["name"]
    # Prometheus holds the metrics-only key, never the instance's (the file is compared inside the container).
    key_file = f"/etc/prometheus/volta/keys/{V100}-{INSTANCE['name']}.key"
    same = docker("exec", "-i", PROM, "python3", "-c", SAME_FILE, key_file, check=False, stdin=METRICS_KEY)
    assert same.stdout.strip() == "same", same.stdout + same.stderr
    other = docker("exec", "-i", PROM, "python3", "-c", SAME_FILE, key_file, check=False, stdin=KEY)
    assert other.stdout.strip() == "different", other.stdout + other.stderr


@pytest.mark.parametrize(("path", "key", "status"), [
    ("/metrics", "metrics", 200),
    ("/metrics/", "metrics", 200),
    # The metrics key opens no inference path (hole 4: Prometheus sent a full API key over plain HTTP).
    ("/v1/models", "metrics", 401),
    ("/v1/chat/completions", "metrics", 401),
    ("/tokenize", "metrics", 401),
    ("/metrics/../v1/models", "metrics", 401),
    # The instance's key still works everywhere.
    ("/v1/models", "instance", 200),
    ("/metrics", "instance", 200),
    ("/metrics", None, 401),
])  # fmt: skip
def test_the_metrics_key_reads_metrics_and_nothing_else(path, key, status):
    # From the monitoring host (in api_gateway_metrics_allow), to the gateway's lab address; the key on stdin.
    spec = {"host": address(V100), "port": INSTANCE["port"], "path": path,
            "key": {"metrics": METRICS_KEY, "instance": KEY}.get(key)}
    out = docker("exec", "-i", PROM, "python3", "-c", CALL, stdin=json.dumps(spec)).stdout
    assert json.loads(out)["status"] == status, (path, key, out)


def test_the_gateway_does_not_answer_on_loopback():
    # api_gateway_listen_address is the lab address: the role's verify called it there, not on 127.0.0.1.
    out = docker("exec", V100, "python3", "-c", PORT_OPEN, "127.0.0.1", str(INSTANCE["port"]), check=False).stdout
    assert out.strip() == "closed", out


def test_the_exporter_reports_the_lab_gpus(healthy_gpus):
    def value(expr):
        result = query(f'{expr}{{host="{V100}"}}')
        return result[0]["value"][1] if result else None

    assert wait_for("volta_gpu_count", lambda: value("volta_gpu_count")) == str(len(GPUS))
    assert value("volta_gpu_expected_count") == str(EXPECTED)
    assert value("volta_gpu_exporter_nvml_up") == "1"
    info = query(f'volta_gpu_info{{host="{V100}"}}')
    assert sorted(int(s["metric"]["gpu"]) for s in info) == list(range(len(GPUS)))
    assert {s["metric"]["name"] for s in info} == {gpu["name"] for gpu in GPUS}
    assert query(f'node_exporter_build_info{{host="{V100}",job="volta-node"}}'), "node_exporter's own series"


def test_uncorrectable_ecc_fires_its_alert_and_nothing_else(healthy_gpus):
    assert alerts(ECC_ALERT) == [], "healthy GPUs: the ECC alert must not be there before the injection"
    set_state("0 ecc.1.0 1")  # one uncorrected volatile ECC error on GPU 0 (nvml-sim README)

    def firing():
        found = [a for a in alerts(ECC_ALERT) if a["state"] == "firing"]
        return found or None

    fired = wait_for(f"{ECC_ALERT} firing", firing)
    assert [(a["labels"]["host"], a["labels"]["gpu"], a["labels"]["bus_id"]) for a in fired] == [
        (V100, "0", GPUS[0]["bus_id"])]
    assert fired[0]["labels"]["severity"] == "critical"
    for name in QUIET_ALERTS:
        assert alerts(name) == [], f"{name} is not injected: it must be neither pending nor firing"
