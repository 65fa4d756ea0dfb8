"""Verify one instance over two lab hosts on the real Ray cluster (Ray 2.54.0 from the engine install).

Expected values come from the scenario (molecule.yml: the members, their GPUs, the instance's port and
test key) and from engine_service's defaults (the Ray ports, the one home of them), not from the plan.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

TOP = Path(__file__).resolve().parents[3]
SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
ALL = SCENARIO["provisioner"]["inventory"]["group_vars"]["volta"]
INSTANCE = ALL["volta_instances"][0]
HEAD, WORKER = INSTANCE["cluster"]["members"]
KEY = ALL["api_gateway_keys"][INSTANCE["name"]]
GPUS = len(INSTANCE["gpus"])
PORTS = yaml.safe_load((TOP / "roles" / "engine_service" / "defaults" / "main.yml").read_text())[
    "engine_service_ray_ports"]
RAY = "/opt/volta/engines/vllm/current/venv/bin"
TOKEN = f"/etc/volta/secrets/ray-{INSTANCE['name']}.token"
IMAGE = "volta-lab/debian12:latest"
testinfra_hosts = [f"ansible://{HEAD}"]

# Run with the install's Python as the engine account: the live nodes, as Ray reports them.
NODES = (
    "import json, ray\n"
    "ray.init(address='{address}', logging_level='ERROR', log_to_driver=False)\n"
    "print(json.dumps([{{'address': n['NodeManagerAddress'], 'gpus': n['Resources'].get('GPU', 0)}}"
    " for n in ray.nodes() if n['Alive']]))\n"
)
# POST /v1/completions through the head's gateway with the key (from stdin); prints the HTTP status.
COMPLETION = (
    "import json, sys, urllib.request, urllib.error\n"
    "key = sys.stdin.read().strip()\n"
    "body = json.dumps({'model': '%s', 'prompt': 'hello', 'max_tokens': 4}).encode()\n"
    "req = urllib.request.Request('http://%s:%d/v1/completions', data=body,"
    " headers={'Content-Type': 'application/json'})\n"
    "key and req.add_header('Authorization', 'Bearer ' + key)\n"
    "try:\n"
    "    print(urllib.request.urlopen(req, timeout=20).status)\n"
    "except urllib.error.HTTPError as e:\n"
    "    print(e.code)\n"
    "except OSError as e:\n"
    "    print('down', e)\n"
)


def docker(host, *args, check=True, stdin=None):
    return subprocess.run(["docker", "exec", "-i", host, *args], capture_output=True, text=True, check=check,
                          input=stdin, timeout=180)


def address(host):
    out = subprocess.run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
                          host], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def nodes():
    script = NODES.format(address=f"{address(HEAD)}:{PORTS['gcs']}")
    out = docker(HEAD, "runuser", "-u", "volta", "--", "env", "RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={TOKEN}",
                 f"{RAY}/python", "-I", "-c", script)
    return json.loads(out.stdout.strip().splitlines()[-1])


def completion(key=KEY, host=HEAD):
    script = COMPLETION % (INSTANCE["served_model_name"], address(HEAD), INSTANCE["port"])
    return docker(host, "python3", "-c", script, stdin=key).stdout.strip()


def test_both_members_are_ray_nodes_with_their_gpus():
    alive = {n["address"]: n["gpus"] for n in nodes()}
    assert alive == {address(HEAD): GPUS, address(WORKER): GPUS}


def test_ray_runs_as_the_engine_account_from_the_engine_install():
    for host in (HEAD, WORKER):
        unit = docker(host, "systemctl", "show", "volta-ray.service", "-p", "User", "-p", "ActiveState",
                      "-p", "ExecStart").stdout
        assert "User=volta" in unit and "ActiveState=active" in unit
        assert f"{RAY}/ray" in unit
        assert "--include-dashboard=false" in unit or host == WORKER
        assert "token" not in unit.split("ExecStart=")[1].lower()


def test_the_token_is_the_engine_accounts_alone_and_in_no_argv():
    for host in (HEAD, WORKER):
        assert docker(host, "stat", "-c", "%U %a", TOKEN).stdout.split() == ["volta", "600"]
        token = docker(host, "cat", TOKEN).stdout.strip()
        assert len(token) >= 32
        argv = docker(host, "sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
        assert token not in argv
        assert token not in docker(host, "cat", "/etc/systemd/system/volta-ray.service").stdout


def test_the_head_serves_through_its_gateway_with_the_key():
    assert completion() == "200"
    assert completion(key="") == "401"


ROUTER = "mn-router"


@pytest.mark.parametrize(("key", "status"), [(KEY, "200"), ("", "401")])
def test_the_router_serves_the_instance_from_its_head_alone(key, status):
    """The fleet router's one backend of the instance is the head (the worker has no listener), on the
    instance's port with its key; the router listens on its lab address."""
    rotation = docker(ROUTER, "ls", "/etc/nginx/volta-router/rotation").stdout.split()
    assert rotation == [f"{INSTANCE['port']}-{HEAD}.conf"]
    conf = docker(ROUTER, "cat", "/etc/nginx/conf.d/volta-router.conf").stdout
    assert f"listen {address(ROUTER)}:{INSTANCE['port']};" in conf
    script = COMPLETION % (INSTANCE["served_model_name"], address(ROUTER), INSTANCE["port"])
    assert docker(ROUTER, "python3", "-c", script, stdin=key).stdout.strip() == status


def test_the_instance_placed_ray_actors_on_both_members():
    log = docker(HEAD, "journalctl", "-u", f"volta-{INSTANCE['name']}.service", "--no-pager", "-o", "cat").stdout
    assert address(WORKER) in log and address(HEAD) in log
    assert not docker(WORKER, "systemctl", "cat", f"volta-{INSTANCE['name']}.service", check=False).returncode == 0


def probe_ports(target, ports):
    """From a container on the lab network that is not a member: each port's answer (open/closed/timeout)."""
    script = (
        "import socket, sys, json\n"
        "out = {}\n"
        "for p in map(int, sys.argv[2:]):\n"
        "    s = socket.socket(); s.settimeout(1.5)\n"
        "    try:\n"
        "        s.connect((sys.argv[1], p)); out[p] = 'open'\n"
        "    except socket.timeout:\n"
        "        out[p] = 'timeout'\n"
        "    except OSError:\n"
        "        out[p] = 'closed'\n"
        "    finally:\n"
        "        s.close()\n"
        "print(json.dumps(out))\n"
    )
    out = subprocess.run(["docker", "run", "--rm", "--network", "volta-lab", "--entrypoint", "python3", IMAGE,
                          "-c", script, target, *map(str, ports)], capture_output=True, text=True, check=True,
                         timeout=300)
    return {int(k): v for k, v in json.loads(out.stdout).items()}


def test_rays_ports_are_closed_to_a_non_member():
    single = [v for k, v in PORTS.items() if k not in ("worker_min", "worker_max")]
    workers = [PORTS["worker_min"], PORTS["worker_min"] + 1, PORTS["worker_max"]]
    for host in (HEAD, WORKER):
        seen = probe_ports(address(host), [*single, *workers, INSTANCE["port"]])
        # The probe can see an open port: the head's gateway answers it.
        if host == HEAD:
            assert seen.pop(INSTANCE["port"]) == "open"
        else:
            seen.pop(INSTANCE["port"])
        assert set(seen.values()) <= {"timeout", "closed"}, (host, seen)
    # ... while the members reach each other's GCS port (the rule is for members only).
    reach = docker(WORKER, "python3", "-c", f"import socket; socket.create_connection(('{address(HEAD)}', "
                   f"{PORTS['gcs']}), 3); print('open')").stdout.strip()
    assert reach == "open"


def wait_for(check, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(2)
    pytest.fail(f"{what} not within {timeout} s")


def test_a_dead_worker_is_detected_named_and_the_cluster_comes_back():
    docker(WORKER, "systemctl", "stop", "volta-ray.service")
    try:
        # The head's vLLM loses its pipeline stage on the worker: /health fails, the engine exits.
        wait_for(lambda: completion() != "200", 90, "the instance failing without its worker")
        log = docker(HEAD, "journalctl", "-u", f"volta-{INSTANCE['name']}.service", "--no-pager", "-o", "cat",
                     "-n", "200").stdout
        assert address(WORKER) in log
        # The membership check names the member that is gone.
        check = subprocess.run(
            ["ansible", HEAD, "-i", os.environ["MOLECULE_INVENTORY_FILE"], "-m",
             "volta.serving.ray_members", "-a", json.dumps({
                 "python": f"{RAY}/python", "address": f"{address(HEAD)}:{PORTS['gcs']}", "token_file": TOKEN,
                 "user": "volta", "members": [{"host": HEAD, "address": address(HEAD)},
                                              {"host": WORKER, "address": address(WORKER)}],
                 "gpus": GPUS, "timeout": 4})],
            check=False, capture_output=True, text=True, timeout=120)
        assert check.returncode != 0
        assert f"lacks {WORKER} ({address(WORKER)})" in check.stdout
    finally:
        docker(WORKER, "systemctl", "start", "volta-ray.service")
    # The worker's node rejoins; the head's vLLM (Restart=on-failure) gets its placement group again.
    wait_for(lambda: len(nodes()) == 2, 120, "the worker's Ray node rejoining")
    wait_for(lambda: completion() == "200", 180, "the instance serving again")
