"""Verify the fleet router: one endpoint for lab-chat in front of two hosts' gateways, from the router container.

Expected values come from the scenario (molecule.yml: the service, its port and its test key), not from
the roles. Requests run inside the router container (python3's http.client, the key on stdin, never on
a command line); the load is a fixed number of requests at most, bounded in time too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
VOLTA = SCENARIO["provisioner"]["inventory"]["group_vars"]["volta"]
INSTANCE = VOLTA["volta_instances"][0]
MODEL = INSTANCE["served_model_name"]
PORT = INSTANCE["service_port"]
KEY = VOLTA["api_gateway_keys"][MODEL]
ROUTER = "router-lb"
HOSTS = ("router-gpu-a", "router-gpu-b")
ACCESS_LOG = f"/var/log/nginx/volta-service-{PORT}.access.log"
TOP = Path(__file__).resolve().parents[3]
testinfra_hosts = [f"ansible://{ROUTER}"]

# Runs in a container: requests described by JSON on stdin ({"host", "port", "key", "requests": [...],
# "concurrency", "max_seconds", "stop_file"}); prints one JSON summary. Each request is a new connection;
# a stream is ok only when it ends with data: [DONE] (else truncated).
CLIENT = r"""
import http.client, json, os, sys, threading, time
spec = json.load(sys.stdin)
lock, results, began = threading.Lock(), [], time.monotonic()
todo = list(enumerate(spec["requests"]))

def one(index, req):
    headers = {"Content-Type": "application/json"}
    if req.get("key"):
        headers["Authorization"] = "Bearer " + req["key"]
    start = time.monotonic() - began
    out = {"index": index, "start": round(start, 3), "ok": False, "status": None, "truncated": False}
    try:
        conn = http.client.HTTPConnection(spec["host"], spec["port"], timeout=req.get("timeout", 30))
        body = json.dumps(req["body"]) if req.get("body") is not None else None
        conn.request(req.get("method", "GET"), req["path"], body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read().decode(errors="replace")
        out["status"] = resp.status
        out["body"] = data[-300:]
        if (req.get("body") or {}).get("stream"):
            out["truncated"] = resp.status == 200 and "data: [DONE]" not in data
            out["ok"] = resp.status == 200 and not out["truncated"]
        else:
            out["ok"] = resp.status == 200
        conn.close()
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["end"] = round(time.monotonic() - began, 3)
    return out

def lane():
    while True:
        with lock:
            if not todo or time.monotonic() - began > spec.get("max_seconds", 300):
                return
            if spec.get("stop_file") and os.path.exists(spec["stop_file"]):
                return
            index, req = todo.pop(0)
        result = one(index, req)
        with lock:
            results.append(result)

threads = [threading.Thread(target=lane) for _ in range(spec.get("concurrency", 1))]
for t in threads:
    t.start()
for t in threads:
    t.join()
results.sort(key=lambda r: r["index"])
print(json.dumps({"results": results, "seconds": round(time.monotonic() - began, 1)}))
"""


def docker(*argv, stdin=None, check=True, timeout=120):
    proc = subprocess.run(["docker", *argv], input=stdin, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def chat(stream=False, key=KEY):
    return {"method": "POST", "path": "/v1/chat/completions", "key": key,
            "body": {"model": MODEL, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 8,
                     "stream": stream}}


def completion():
    return {"method": "POST", "path": "/v1/completions", "key": KEY,
            "body": {"model": MODEL, "prompt": "ping", "max_tokens": 8}}


def lab_address(name):
    return docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", name).stdout.split()[0]


def spec(requests, host=None, port=PORT, **extra):
    """The router listens on its lab address (router_listen_address), not on loopback: requests go there."""
    return {"host": host or lab_address(ROUTER), "port": port, "requests": requests, **extra}


def send(requests, on=ROUTER, **extra):
    out = docker("exec", "-i", on, "python3", "-c", CLIENT, stdin=json.dumps(spec(requests, **extra)),
                 timeout=extra.get("max_seconds", 100) + 60).stdout
    return json.loads(out)["results"]


def served(host):
    """POSTs the host's gateway passed to its replica on the service port (its access log)."""
    out = docker("exec", host, "sh", "-c", f"grep -c 'POST /v1/' {ACCESS_LOG} || true").stdout
    return int(out.strip() or 0)


def test_chat_through_the_router_succeeds_and_both_hosts_serve():
    before = {h: served(h) for h in HOSTS}
    results = send([chat(), chat(stream=True)] * 4 + [completion()])
    bad = [r for r in results if not r["ok"]]
    assert bad == [], bad
    after = {h: served(h) for h in HOSTS}
    assert sum(after[h] - before[h] for h in HOSTS) == len(results)
    for h in HOSTS:
        assert after[h] - before[h] >= 2, (h, before, after)


def test_the_real_openai_client_through_the_router():
    """What a new user tries first (bench/loadgen.client_checks: chat, streaming, completions, /v1/models,
    wrong and missing key), with the pinned openai client, from the controller over the lab network."""
    sys.path.insert(0, str(TOP / "bench"))
    import loadgen  # bench/ is not a package: imported where its client is needed

    assert loadgen.client_checks(f"http://{lab_address(ROUTER)}:{PORT}/v1", KEY, MODEL) == []


def test_the_router_listens_on_its_lab_address_only():
    """router_listen_address is the lab address: nothing answers on loopback (the role's verify, which passed in
    converge, probed the lab address)."""
    (loopback,) = send([{"path": "/health", "timeout": 3}], host="127.0.0.1")
    assert loopback["status"] is None and "refused" in loopback.get("error", ""), loopback
    conf = docker("exec", ROUTER, "cat", "/etc/nginx/conf.d/volta-router.conf").stdout
    assert f"listen {lab_address(ROUTER)}:{PORT};" in conf


@pytest.mark.parametrize("key", [KEY[:-1] + "x", None], ids=["wrong-key", "no-key"])
def test_a_wrong_or_missing_key_is_refused_at_the_router(key):
    before = {h: served(h) for h in HOSTS}
    (result,) = send([chat(key=key)])
    assert result["status"] == 401
    # OpenAI's error format with what to do (issue 53), as the openai client reads it.
    error = json.loads(result["body"])["error"]
    assert (error["type"], error["param"], error["code"]) == ("authentication_error", None, 401), error
    assert ("No API key was sent" if key is None else "not the API key of this service") in error["message"], error
    # Refused by the router: no host saw the request.
    assert {h: served(h) for h in HOSTS} == before


def test_health_needs_no_key_and_metrics_are_not_routed():
    health, metrics = send([{"path": "/health"}, {"path": "/metrics", "key": KEY}])
    assert (health["status"], metrics["status"]) == (200, 404)


def test_the_router_config_is_managed_and_checked_and_hides_its_version(host):
    conf = host.file("/etc/nginx/conf.d/volta-router.conf")
    assert conf.content_string.splitlines()[:3] == ["#", "# Ansible managed", "#"]
    assert "server_tokens off;" in conf.content_string
    keys = host.file("/etc/nginx/volta-router/keys.conf")
    assert (keys.user, keys.group, keys.mode) == ("root", "www-data", 0o640)
    for name in HOSTS:
        line = host.file(f"/etc/nginx/volta-router/rotation/{PORT}-{name}.conf").content_string
        assert line == f"server {name}:{PORT} max_fails=1 fail_timeout=5s;\n"
    assert host.run("nginx -t").rc == 0


def test_the_hosts_firewalls_let_the_router_in_on_the_service_port_only():
    # The router reaches the service port, not an instance's own port; another host reaches neither.
    (own,) = send([{"path": "/health", "timeout": 3}], host=HOSTS[1], port=INSTANCE["port"])
    assert own["status"] is None and "timed out" in own.get("error", ""), own
    (via_router,) = send([{"path": "/health", "timeout": 3}], host=HOSTS[1])
    assert via_router["status"] == 200
    (other_host,) = send([{"path": "/health", "timeout": 3}], on=HOSTS[0], host=HOSTS[1])
    assert other_host["status"] is None and "timed out" in other_host.get("error", ""), other_host


def test_a_stopped_gateway_is_passed_over():
    docker("exec", HOSTS[0], "systemctl", "stop", "nginx")
    try:
        results = send([chat(), chat(stream=True)] * 4)
    finally:
        docker("exec", HOSTS[0], "systemctl", "start", "nginx")
    assert [r for r in results if not r["ok"]] == []
    # fail_timeout (5 s): the host is tried again after it.
    time.sleep(6)


def upgrade(*extra):
    """playbooks/upgrade.yml on the scenario's inventory (the engine role is not in this scenario)."""
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1"}
    playbook = str(Path(sys.executable).with_name("ansible-playbook"))
    return subprocess.Popen(
        [playbook, "-i", os.environ["MOLECULE_INVENTORY_FILE"], str(TOP / "playbooks" / "upgrade.yml"),
         "--skip-tags", "engine", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_an_upgrade_through_the_router_drops_no_request(host, tmp_path):
    stop = "/tmp/volta-router-load-stop"  # noqa: S108  inside the router container
    docker("exec", ROUTER, "rm", "-f", stop)
    requests = [chat(stream=bool(i % 2)) for i in range(3000)]
    load_spec = tmp_path / "load.json"
    load_spec.write_text(json.dumps(spec(requests, concurrency=4, max_seconds=240, stop_file=stop)))
    with load_spec.open() as stdin:
        load = subprocess.Popen(["docker", "exec", "-i", ROUTER, "python3", "-c", CLIENT], stdin=stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    run = upgrade("-e", "lab_generation=2")
    log = run.communicate(timeout=400)[0]
    docker("exec", ROUTER, "touch", stop)
    out, err = load.communicate(timeout=120)
    results = json.loads(out)["results"]
    assert run.returncode == 0, log[-4000:]
    # Each host was taken out of the router's upstream (drained) before its restart, and put back: two
    # changes on the router per host.
    assert len(re.findall(r"changed: \[router-gpu-[ab] -> router-lb\]", log)) == 4, log[-4000:]
    for name in HOSTS:
        env = docker("exec", name, "systemctl", "show", "-p", "Environment", "volta-chat.service").stdout
        assert "VOLTA_LAB_GENERATION=2" in env, name
        line = host.file(f"/etc/nginx/volta-router/rotation/{PORT}-{name}.conf").content_string
        assert line.endswith("max_fails=1 fail_timeout=5s;\n"), (name, line)
    failed = [r for r in results if not r["ok"]]
    truncated = [r for r in results if r["truncated"]]
    assert len(results) >= 50, err
    assert (len(failed), len(truncated)) == (0, 0), failed[:5]
    latencies = sorted(r["end"] - r["start"] for r in results)
    report = {"requests": len(results), "failed": 0, "truncated": 0, "load_s": json.loads(out)["seconds"],
              "p50_s": round(latencies[len(latencies) // 2], 3),
              "p99_s": round(latencies[int(len(latencies) * 0.99)], 3)}
    (Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", tmp_path)) / "router-upgrade-load.json").write_text(
        json.dumps(report))
    print(f"\nthrough the router during the upgrade: {report}")
