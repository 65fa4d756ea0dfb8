"""Verify a service of two replicas behind one port, with the real openai client and real nginx.

Expected values come from the scenario (molecule.yml: the instances, ports, service port and test keys),
not from the roles. The load is bench/loadgen.py (the pinned openai client, in its cached venv), run on
the controller against the lab container's address; every request is bounded and recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

TOP = Path(__file__).resolve().parents[3]
SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
HOST = "replicas-v100"
HOST_VARS = SCENARIO["provisioner"]["inventory"]["host_vars"][HOST]
INSTANCES = {i["name"]: i for i in HOST_VARS["volta_instances"]}
SERVICE_PORT = INSTANCES["chat-a"]["service_port"]
MODEL = INSTANCES["chat-a"]["served_model_name"]
KEY = HOST_VARS["api_gateway_keys"][MODEL]
SOLO = INSTANCES["solo"]
SOLO_KEY = HOST_VARS["api_gateway_keys"][SOLO["name"]]
# The figures of the loads stay after the scenario (bench/replicas prints them): the checkout's .cache.
WORK = TOP / ".cache" / "bench" / "replicas"
testinfra_hosts = [f"ansible://{HOST}"]

sys.path.insert(0, str(TOP / "bench"))
import loadgen  # noqa: E402  bench/ is not a package


def docker(*args, check=True):
    return subprocess.run(["docker", "exec", HOST, *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def address():
    out = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                          HOST], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def url(address, port):
    return f"http://{address}:{port}/v1"


class Load:
    """bench/loadgen.run_load (the pinned openai client) in batches on a thread, until stop() or *batches* ran."""

    def __init__(self, base_url, key, model, requests=40, concurrency=6, batches=None):
        self.args, self.batches, self.results = (base_url, key, model, requests, concurrency), batches, []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set() and (self.batches is None or len(self.results) < self.batches):
            self.results.append(loadgen.run_load(*self.args, timeout=60.0))

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=600)
        records = []
        for result in self.results:  # every record's start and end on the wall clock
            records += [{**r, "start": r["start"] + result["started_at"], "end": r["end"] + result["started_at"]}
                        for r in result["records"]]
        return loadgen.summarize(records), records


def once(base_url, key, model, requests=40, concurrency=6):
    load = Load(base_url, key, model, requests, concurrency, batches=1)
    load.thread.join(timeout=600)
    return load.stop()[0]


def rerun(*extra):
    """The scenario's converge again, as molecule runs it (its inventory), with extra variables."""
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    converge = Path(__file__).resolve().parents[1] / "converge.yml"
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", inventory, str(converge), *extra], capture_output=True,
                          text=True, env=env, check=False)


def test_the_service_answers_the_real_openai_client(address):
    problems = loadgen.client_checks(url(address, SERVICE_PORT), KEY, MODEL)
    assert problems == []


def test_each_replica_keeps_its_own_port_with_the_service_key(address):
    for name in ("chat-a", "chat-b"):
        problems = loadgen.client_checks(url(address, INSTANCES[name]["port"]), KEY, MODEL)
        assert problems == [], name


def test_the_gateway_balances_over_both_replicas(host, address):
    summary = once(url(address, SERVICE_PORT), KEY, MODEL)
    assert summary["failed"] == 0
    for name in ("chat-a", "chat-b"):
        count = served(host, name)
        assert count >= 5, f"{name} served {count} of 40 requests"


def test_status_lists_the_replicas_in_rotation(host):
    for name in ("chat-a", "chat-b"):
        line = host.file(f"/etc/nginx/volta/rotation/{SERVICE_PORT}-{name}.conf").content_string
        assert line == f"server 127.0.0.1:{INSTANCES[name]['port'] + 10000} max_fails=1 fail_timeout=5s;\n"


def test_an_upgrade_by_rerun_drops_no_request_of_the_service_and_the_lone_instance_is_down(host, address):
    steady = once(url(address, SERVICE_PORT), KEY, MODEL, requests=60)
    service = Load(url(address, SERVICE_PORT), KEY, MODEL)
    solo = Load(url(address, SOLO["port"]), SOLO_KEY, SOLO["served_model_name"], concurrency=2)
    time.sleep(2)
    run = rerun("-e", "replicas_generation=2")
    time.sleep(1)
    during, alone = service.stop()[0], solo.stop()[0]
    assert run.returncode == 0, run.stdout[-3000:]
    # Both replicas were restarted, one after the other, each after a drain.
    assert run.stdout.count("out of rotation,") == 2, run.stdout[-3000:]
    for name in ("chat-a", "chat-b", "solo"):
        env = host.run(f"systemctl show -p Environment volta-{name}.service").stdout
        assert "VOLTA_LAB_GENERATION=2" in env, name
    assert during["total"] >= 80
    assert (during["failed"], during["truncated"]) == (0, 0), during["errors"]
    # The lone instance had an outage (its one unit restarted); the figure is reported, not bounded.
    assert alone["failed"] > 0
    WORK.mkdir(parents=True, exist_ok=True)
    report = {"steady": steady, "upgrade_service": during, "upgrade_solo": alone}
    (WORK / "report.json").write_text(json.dumps(report, indent=1))
    print(f"\nservice of 2 replicas: steady p50 {steady['p50_s']} s p99 {steady['p99_s']} s; during the rerun "
          f"{during['total']} requests, p50 {during['p50_s']} s p99 {during['p99_s']} s, failed {during['failed']}, "
          f"truncated {during['truncated']}; 1 replica: failed {alone['failed']} of {alone['total']}, "
          f"outage {alone['outage_s']} s")


def main_pid(host, name):
    return host.run(f"systemctl show -p MainPID --value volta-{name}.service").stdout.strip()


def served(host, name):
    """The requests the replica's engine answered since it started (its own counter, read on the host)."""
    url = f"http://127.0.0.1:{INSTANCES[name]['port'] + 10000}/metrics"
    read = f"import urllib.request; print(urllib.request.urlopen('{url}').read().decode())"
    metrics = host.check_output(f'python3 -c "{read}"')
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith("vllm:request_success_total"))


def test_a_killed_replica_loses_only_its_requests_in_flight_and_rejoins(host, address):
    load = Load(url(address, SERVICE_PORT), KEY, MODEL)
    time.sleep(3)
    killed_at = time.time()
    docker("systemctl", "kill", "-s", "KILL", "volta-chat-a.service")
    time.sleep(8)
    summary, records = load.stop()
    # Every failed request was in flight on the killed engine: started before the kill, ended after it.
    late = [r for r in records if not r["ok"] and r["start"] > killed_at + 0.2]
    assert late == [], late[:5]
    assert summary["total"] >= 40
    # systemd restarted it (RestartSec 2 s here) and it serves again.
    deadline = time.time() + 60
    while time.time() < deadline and host.run("systemctl is-active volta-chat-a.service").stdout.strip() != "active":
        time.sleep(1)
    assert int(host.run("systemctl show -p NRestarts --value volta-chat-a.service").stdout) >= 1
    # It rejoins: after nginx's fail_timeout (5 s) it takes requests again (its counter restarted from 0).
    time.sleep(6)
    again = once(url(address, SERVICE_PORT), KEY, MODEL)
    assert again["failed"] == 0
    assert served(host, "chat-a") >= 1


def test_a_drain_that_times_out_restarts_nothing_and_puts_the_replica_back(host, address):
    # Requests on chat-a's own port (not drained) keep its engine busy past a drain bound of 0 s.
    before = main_pid(host, "chat-a")
    busy = Load(url(address, INSTANCES["chat-a"]["port"]), KEY, MODEL, concurrency=4)
    time.sleep(1)
    run = rerun("-e", "replicas_generation=3", "-e", "engine_service_drain_timeout=0")
    busy.stop()
    assert run.returncode != 0
    flat = " ".join((run.stdout + run.stderr).split())
    assert "request(s) still in flight on 127.0.0.1:18001 after 0 s of draining" in flat, run.stdout[-3000:]
    assert "It is back in rotation and was not restarted." in flat
    line = host.file(f"/etc/nginx/volta/rotation/{SERVICE_PORT}-chat-a.conf").content_string
    assert " down;" not in line
    assert main_pid(host, "chat-a") == before


@pytest.fixture(scope="module", autouse=True)
def back_to_generation_two():
    yield
    rerun("-e", "replicas_generation=2")
