"""Verify engine_service + api_gateway (+ firewall) on the simulated V100 host, from the client.

Expected values come from the scenario (molecule.yml: the instance, its ports and its test key;
prepare.yml: the retired unit; converge.yml: the client is the only allowed network), not from
the roles. Everything that carries the key runs through `docker exec` with the key on stdin, so
the verifier itself never puts the key on a command line or into Ansible's log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
V100, CLIENT = "serving-v100", "serving-client"
HOST_VARS = SCENARIO["provisioner"]["inventory"]["host_vars"][V100]
INSTANCE = HOST_VARS["volta_instances"][0]
KEY = HOST_VARS["api_gateway_keys"][INSTANCE["name"]]
SECRET = INSTANCE["secret_env"]["HF_TOKEN"].replace("$$", "$")  # molecule.yml escapes $ as $$
PUBLIC = INSTANCE["port"]
BACKEND = PUBLIC + 10000
UNIT = f"volta-{INSTANCE['name']}.service"
MODEL = INSTANCE["served_model_name"]
testinfra_hosts = [f"ansible://{V100}"]
# The log of the scenario's ansible-playbook runs (molecule.yml). The verifier's own Ansible calls
# (testinfra reads the inventory, test key included, with ansible-inventory) stay out of it.
ANSIBLE_LOG = Path(
    os.environ.pop("ANSIBLE_LOG_PATH", "") or Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible.log"
)

# Runs on the client: one HTTP request described by JSON on stdin; prints the outcome as JSON,
# with the arrival time of every line of the body (to see SSE chunks arrive one by one).
REQUEST = r"""
import http.client, json, socket, sys, time
spec = json.load(sys.stdin)
headers = {"Content-Type": "application/json"}
if spec.get("key"):
    headers["Authorization"] = spec.get("scheme", "Bearer") + " " + spec["key"]
headers.update(spec.get("headers") or {})
source = (spec["source"], 0) if spec.get("source") else None
conn = http.client.HTTPConnection(spec["host"], spec["port"], timeout=spec.get("timeout", 10), source_address=source)
start = time.monotonic()
try:
    body = json.dumps(spec["body"]) if spec.get("body") is not None else None
    conn.request(spec.get("method", "GET"), spec["path"], body=body, headers=headers)
    resp = conn.getresponse()
    lines = []
    while True:
        line = resp.readline()
        if not line:
            break
        lines.append([round(time.monotonic() - start, 3), line.decode(errors="replace").rstrip("\n")])
    print(json.dumps({"status": resp.status, "headers": dict(resp.getheaders()), "lines": lines}))
except ConnectionRefusedError:
    print(json.dumps({"status": "refused"}))
except (socket.timeout, TimeoutError):
    print(json.dumps({"status": "timeout"}))
except OSError as exc:
    print(json.dumps({"status": "error", "error": str(exc)}))
"""


def docker(*argv, stdin=None, check=True):
    proc = subprocess.run(["docker", *argv], input=stdin, capture_output=True, text=True, timeout=120, check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def address(container):
    out = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", container).stdout
    return out.split()[0]


def request(path, key=None, method="GET", body=None, port=PUBLIC, source=None, timeout=10, *, scheme="Bearer",
            headers=None, on=CLIENT, repeat=1):  # fmt: skip
    """One request from *on* (the client container; V100: from the host itself, over loopback)."""
    spec = {"host": "127.0.0.1" if on == V100 else address(V100), "port": port, "path": path, "key": key,
            "method": method, "body": body, "source": source, "timeout": timeout, "scheme": scheme,
            "headers": headers}  # fmt: skip
    script = REQUEST if repeat == 1 else f"import io, sys\nspec = sys.stdin.read()\nfor _ in range({repeat}):\n" \
        f"    sys.stdin = io.StringIO(spec)\n    exec(compile({REQUEST!r}, 'request', 'exec'), {{}})\n"
    out = docker("exec", "-i", on, "python3", "-c", script, stdin=json.dumps(spec)).stdout
    results = [json.loads(line) for line in out.splitlines()]
    return results[0] if repeat == 1 else results


def text(result):
    return "\n".join(line for _t, line in result.get("lines", []))


# ---- engine_service ------------------------------------------------------------------------


def test_service_account_in_gpu_groups(host):
    user = host.user("volta")
    assert user.exists
    assert {"video", "render"} <= set(user.groups)
    assert user.shell == "/usr/sbin/nologin"


def test_unit_running_as_service_user_with_hardening(host):
    unit = host.file(f"/etc/systemd/system/{UNIT}")
    assert unit.exists
    assert unit.user == "root"
    assert unit.mode == 0o644
    content = unit.content_string
    for line in (
        "User=volta",
        "Restart=on-failure",
        "NoNewPrivileges=true",
        "ProtectSystem=strict",
        "ProtectHome=true",
        "PrivateTmp=true",
        'Environment="CUDA_VISIBLE_DEVICES=0"',
        'Environment="CUDA_DEVICE_ORDER=PCI_BUS_ID"',
        "EnvironmentFile=/etc/volta/secrets/chat.env",
        "TimeoutStartSec=1800",
        "IPAddressDeny=any",
        "IPAddressAllow=localhost",
    ):
        assert line in content.splitlines(), line
    assert f"--host 127.0.0.1 --port {BACKEND}" in content
    service = host.service(UNIT)
    assert service.is_running
    assert service.is_enabled
    pid = host.check_output(f"systemctl show -p MainPID --value {UNIT}")
    assert host.check_output(f"ps -o user= -p {pid}").strip() == "volta"


def test_unit_passes_systemd_analyze_verify(host):
    assert host.run(f"systemd-analyze verify /etc/systemd/system/{UNIT}").rc == 0


def show(host, unit, *properties):
    """The properties systemd loaded; one that is listed on several lines (DeviceAllow) is joined with '; '."""
    out = host.check_output(f"systemctl show {unit} " + " ".join(f"-p {p}" for p in properties))
    props = {}
    for line in out.splitlines():
        name, value = line.split("=", 1)
        props[name] = f"{props[name]}; {value}" if name in props else value
    return props


def test_unit_sandbox_is_in_force(host):
    # What systemd loaded (not the file's text): the engine that serves below runs under it.
    props = show(host, UNIT, "CapabilityBoundingSet", "ProtectProc", "ProtectKernelLogs", "ProtectClock",
                 "ProtectHostname", "RestrictNamespaces", "RestrictAddressFamilies", "DevicePolicy", "DeviceAllow",
                 "StartLimitIntervalUSec", "StartLimitBurst", "ActiveState")
    assert props["CapabilityBoundingSet"] == ""
    assert props["ProtectProc"] == "invisible"
    for name in ("ProtectKernelLogs", "ProtectClock", "ProtectHostname", "RestrictNamespaces"):
        assert props[name] == "yes", name
    assert set(props["RestrictAddressFamilies"].split()) == {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}
    assert props["DevicePolicy"] == "closed"
    # The simulated V100 host has 8 GPUs (molecule.yml); nothing but the NVIDIA devices is allowed.
    allowed = props["DeviceAllow"]
    for rule in ("char-nvidia-frontend rw", "char-nvidia-uvm rw", "/dev/nvidiactl rw", "/dev/nvidia-uvm rw",
                 "/dev/nvidia7 rw"):
        assert rule in allowed, rule
    assert "/dev/nvidia8" not in allowed
    assert props["StartLimitIntervalUSec"] == "10min"
    assert props["StartLimitBurst"] == "5"
    assert props["ActiveState"] == "active"


def test_engine_proc_hides_other_users_processes(host):
    # ProtectProc=invisible: the engine's /proc is mounted with hidepid=invisible.
    pid = host.check_output(f"systemctl show -p MainPID --value {UNIT}")
    proc_mounts = [line for line in host.file(f"/proc/{pid}/mountinfo").content_string.splitlines()
                   if line.split(" - ")[-1].startswith("proc ") and line.split()[4] == "/proc"]
    assert proc_mounts, "no /proc mount in the engine's mount namespace"
    assert "hidepid=invisible" in proc_mounts[-1], proc_mounts


def test_a_crashing_unit_ends_failed_after_the_start_limit(host):
    # The rendered unit with a program that always fails and RestartSec=1: StartLimitBurst (5) starts,
    # then systemd stops restarting it ("Start request repeated too quickly") instead of retrying forever.
    crash = "volta-crashloop-test.service"
    path = f"/etc/systemd/system/{crash}"
    host.check_output(
        f"sed -e 's|^ExecStart=.*|ExecStart=/bin/false|' -e 's|^RestartSec=.*|RestartSec=1|' "
        f"/etc/systemd/system/{UNIT} > {path} && systemctl daemon-reload && systemctl start {crash} || true"
    )
    try:
        deadline = time.monotonic() + 30
        props = {}
        while time.monotonic() < deadline:
            props = show(host, crash, "ActiveState", "NRestarts")
            if props["ActiveState"] == "failed":
                break
            time.sleep(1)
        assert props["ActiveState"] == "failed", props
        assert int(props["NRestarts"]) in (4, 5), props
        time.sleep(3)
        assert show(host, crash, "ActiveState", "NRestarts") == props, "it restarted after the start limit"
        assert "Start request repeated too quickly" in host.check_output(f"journalctl -u {crash} --no-pager")
        # A start is refused until reset-failed, which the role's restart runs first; then it is accepted.
        assert host.run(f"systemctl start {crash}").rc != 0
        host.check_output(f"systemctl reset-failed {crash}")
        assert show(host, crash, "ActiveState")["ActiveState"] == "inactive"
        assert host.run(f"systemctl start {crash}").rc == 0
    finally:
        host.run(f"systemctl stop {crash}; rm -f {path}; systemctl daemon-reload; systemctl reset-failed {crash}")


def test_environment_file_is_roots_only(host):
    # systemd reads it as root before dropping to volta: the engine cannot read its own key file.
    env = host.file("/etc/volta/secrets/chat.env")
    assert (env.user, env.group, env.mode) == ("root", "root", 0o600)
    assert host.file("/etc/volta/secrets").mode == 0o750
    assert host.run("runuser -u volta -- cat /etc/volta/secrets/chat.env").rc != 0


def test_secret_env_reaches_the_engine_but_not_the_unit(host):
    unit = host.file(f"/etc/systemd/system/{UNIT}").content_string
    assert "HF_TOKEN" not in unit
    assert SECRET not in host.check_output(f"systemctl show -p Environment {UNIT}")
    pid = host.check_output(f"systemctl show -p MainPID --value {UNIT}")
    environ = host.check_output(f"cat /proc/{pid}/environ | tr '\\0' '\\n'").splitlines()
    assert f"HF_TOKEN={SECRET}" in environ


def test_engine_listens_on_loopback_only(host):
    assert host.socket(f"tcp://127.0.0.1:{BACKEND}").is_listening
    assert not host.socket(f"tcp://0.0.0.0:{BACKEND}").is_listening


def test_only_listed_key_files_are_deleted(host):
    # prepare.yml: retired.env/.key listed by an earlier run are gone; a file of another program in
    # the directory and a manifest entry outside it are kept; the manifest lists what this run wrote.
    assert not host.file("/etc/volta/secrets/retired.env").exists
    assert not host.file("/etc/volta/secrets/retired.key").exists
    assert host.file("/etc/volta/secrets/other-app.env").exists
    assert host.file("/etc/volta/canary.env").exists
    manifest = host.file("/etc/volta/secrets/.volta-serving-key-files")
    assert (manifest.user, manifest.group, manifest.mode) == ("root", "root", 0o600)
    assert manifest.content_string == "/etc/volta/secrets/chat.env\n"


def test_retired_instance_removed(host):
    assert not host.file("/etc/systemd/system/volta-retired.service").exists
    assert not host.file("/etc/systemd/system/multi-user.target.wants/volta-retired.service").exists
    assert "sleep infinity" not in host.check_output("ps -eo args")


# ---- api_gateway ---------------------------------------------------------------------------


def test_nginx_config_valid_and_default_site_gone(host):
    assert host.package("nginx").is_installed
    assert host.service("nginx").is_running
    assert host.run("nginx -t").rc == 0
    assert not host.file("/etc/nginx/sites-enabled/default").exists
    keys = host.file("/etc/nginx/volta/keys.conf")
    assert (keys.user, keys.group, keys.mode) == ("root", "www-data", 0o640)
    assert host.socket(f"tcp://0.0.0.0:{PUBLIC}").is_listening


# Refused: 401 (no or a wrong key), 403 (metrics from an address not allowed), 429 (past the limit
# of requests without the key, which every refused request of this module counts towards).
REFUSED = (401, 403, 429)


@pytest.mark.parametrize("path", ["/v1/models", "/metrics"])
@pytest.mark.parametrize("key", [None, "wrong-key-0123456789", KEY.upper(), KEY + "x"])
def test_no_valid_key_is_refused(path, key):
    assert request(path, key=key)["status"] in REFUSED


def test_a_refusal_is_an_openai_error_that_says_how_to_send_the_key():
    # Issue 53: {"error": {"message", "type", "param", "code"}}, as the openai client reads it (401, or 429 once
    # this module's refusals passed the limit).
    result = request("/v1/models", key="wrong-key-0123456789")
    assert result["status"] in (401, 429), result
    assert result["headers"]["Content-Type"] == "application/json", result
    error = json.loads(text(result))["error"]
    assert (error["param"], error["code"]) == (None, result["status"]), error
    assert "Authorization: Bearer <key>" in error["message"], error


# Every path vLLM answers without its key (/health, /ping, /version, ^/metrics(.*)$, ...), tricks on
# /health's exact match, and the Realtime WebSocket: from the client, only /health answers.
@pytest.mark.parametrize(
    "path",
    ["/metrics/", "/metricsX", "/metrics/x", "/healthX", "/health/", "/health/../v1/models", "/ping", "/version",
     "/tokenize", "/v1/realtime", "/"],
)  # fmt: skip
def test_no_path_but_health_answers_without_key(path):
    result = request(path)
    assert result["status"] in REFUSED, result
    assert "vllm:" not in text(result)


def test_raw_dot_segments_to_health_reach_health_only():
    # nginx reads /metrics/../health as /health; vLLM would read the raw form as a metrics path
    # (^/metrics(.*)$), so the gateway sends /health, whatever the client wrote.
    result = request("/metrics/../health")
    assert result["status"] == 200
    assert "vllm:" not in text(result)


def test_models_with_key():
    result = request("/v1/models", key=KEY)
    assert result["status"] == 200
    assert MODEL in text(result)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER"])
def test_auth_scheme_in_any_case(scheme):
    result = request("/v1/models", key=KEY, scheme=scheme)
    assert result["status"] == 200
    assert MODEL in text(result)


@pytest.mark.parametrize("path", ["/metrics", "/metrics/", "/metricsX"])
def test_metrics_with_key_from_allowed_network(path):
    result = request(path, key=KEY)
    assert result["status"] == 200
    assert "vllm:num_requests_running" in text(result)


@pytest.mark.parametrize("path", ["/metrics", "/metrics/", "/metricsX"])
def test_metrics_paths_need_an_allowed_address_even_with_the_key(path):
    # From the host itself: 127.0.0.1 is not in api_gateway_metrics_allow (converge.yml).
    assert request(path, key=KEY, on=V100)["status"] == 403


def test_server_header_has_no_version():
    for result in (request("/health"), request("/v1/models", key=KEY), request("/v1/models")):
        assert result["headers"]["Server"] == "nginx", result["headers"]


def test_health_without_key():
    assert request("/health")["status"] == 200


def test_streaming_chat_arrives_as_sse_chunks():
    body = {"model": MODEL, "stream": True, "max_tokens": 12,
            "messages": [{"role": "user", "content": "count to twelve please"}]}  # fmt: skip
    result = request("/v1/chat/completions", key=KEY, method="POST", body=body, timeout=30)
    assert result["status"] == 200
    assert result["headers"].get("Content-Type", "").startswith("text/event-stream")
    events = [(t, line) for t, line in result["lines"] if line.startswith("data: ")]
    assert events[-1][1] == "data: [DONE]"
    assert len(events) >= 5
    # Unbuffered: the stand-in sends one chunk per 0.1 s; they must not arrive all at once.
    assert events[-1][0] - events[0][0] >= 0.5, events


def test_engine_port_not_reachable_from_client():
    # Loopback-only bind: refused; with the firewall in front, dropped.
    assert request("/health", port=BACKEND, timeout=5)["status"] in ("refused", "timeout")


def test_requests_without_key_are_rate_limited_per_client():
    # The last test that sends requests without the key (the limit would answer 429 to later ones).
    # 40 at once from the client: 401 up to the burst (api_gateway_unauthorized_burst, 20; earlier
    # tests used some of it), then 429; the client's requests with the key still pass.
    results = request("/v1/models", key="wrong-key-" + "0" * 30, repeat=40)
    statuses = [r["status"] for r in results]
    assert set(statuses) <= {401, 429}, statuses
    assert statuses[-5:] == [429] * 5, statuses
    error = json.loads(text(results[-1]))["error"]  # OpenAI's error format (issue 53)
    assert (error["type"], error["param"], error["code"]) == ("rate_limit_error", None, 429), error
    assert "Authorization: Bearer <key>" in error["message"], error
    assert request("/v1/models", key=KEY)["status"] == 200
    assert request("/health")["status"] == 200


# ---- the key stays secret ------------------------------------------------------------------


def test_key_not_in_unit_files():
    out = docker("exec", V100, "sh", "-c", "cat /etc/systemd/system/volta-*.service").stdout
    assert out
    assert KEY not in out


def test_key_not_in_process_arguments():
    out = docker("exec", V100, "ps", "-eo", "args").stdout
    assert "vllm serve" in out
    assert KEY not in out


def test_key_not_in_journal():
    out = docker("exec", V100, "journalctl", "--no-pager", "-o", "cat").stdout
    assert "Starting vLLM server on http://127.0.0.1:" in out
    assert KEY not in out


def test_key_not_in_ansible_output():
    # ANSIBLE_LOG_PATH (molecule.yml): the output of every ansible-playbook run of this scenario
    # (prepare, converge, idempotence, ...). It must hold the converge run and not the key.
    content = ANSIBLE_LOG.read_text(errors="replace")
    # The tasks that hold the key ran (no_log: their results never reach the output).
    assert "volta.serving._api_keys : Write the environment files of the engines" in content
    assert "volta.serving._api_keys : Resolve the key of every instance" in content
    assert KEY not in content
    assert SECRET not in content


def test_key_only_in_the_key_files():
    # Every file on the host that holds the key, as is or as nginx's regular expression: the
    # engine's EnvironmentFile and the gateway's key map.
    paths = "/etc /opt /var/lib /var/cache /var/log /usr/local /tmp /root"
    out = docker("exec", "-i", V100, "sh", "-c", f"grep -rlF -f /dev/stdin {paths} 2>/dev/null || true",
                 stdin=f"{KEY}\n{re.escape(KEY)}\n").stdout  # fmt: skip
    assert sorted(out.split()) == ["/etc/nginx/volta/keys.conf", "/etc/volta/secrets/chat.env"]


# ---- firewall ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def other_source():
    """An unused address of the lab network, added to the client: a source the firewall does not allow."""
    subnet = docker("network", "inspect", "-f", "{{(index .IPAM.Config 0).Subnet}}", "volta-lab").stdout.strip()
    base, bits = subnet.split("/")
    assert int(bits) <= 24, subnet
    octets = [int(o) for o in base.split(".")]
    used = set(docker("network", "inspect", "-f", "{{range .Containers}}{{.IPv4Address}} {{end}}",
                      "volta-lab").stdout.split())  # fmt: skip
    for last in range(250, 200, -1):
        candidate = f"{octets[0]}.{octets[1]}.{octets[2]}.{last}"
        if not any(u.startswith(candidate + "/") for u in used):
            break
    docker("exec", CLIENT, "ip", "addr", "add", f"{candidate}/32", "dev", "eth0")
    time.sleep(0.5)
    yield candidate
    docker("exec", CLIENT, "ip", "addr", "del", f"{candidate}/32", "dev", "eth0", check=False)


def test_gateway_dropped_from_other_network(other_source):
    assert request("/health")["status"] == 200
    assert request("/health", source=other_source, timeout=4)["status"] == "timeout"


# ---- what reaches the engine ---------------------------------------------------------------
# The engine stopped and, on its backend port, a server that answers with the path and headers it
# received; the last tests of the module (the fixture restarts the engine at the end).

ECHO = r"""
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        body = json.dumps({"path": self.path, "headers": dict(self.headers)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *args):
        pass
with open("/run/volta-echo.pid", "w") as fh:
    fh.write(str(os.getpid()))
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
"""


def wait_for(check, seconds):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.5)


def echoed(path, **kwargs):
    result = request(path, **kwargs)
    assert result["status"] == 200, result
    return json.loads(text(result))


@pytest.fixture(scope="module")
def echo_backend():
    docker("exec", V100, "systemctl", "stop", UNIT)
    docker("exec", "-d", V100, "python3", "-c", ECHO, str(BACKEND))
    wait_for(lambda: "path" in text(request("/health")), 20)
    yield
    docker("exec", V100, "sh", "-c", "kill $(cat /run/volta-echo.pid)", check=False)
    docker("exec", V100, "systemctl", "start", UNIT)
    wait_for(lambda: MODEL in text(request("/v1/models", key=KEY)), 90)


def test_forwarded_for_is_the_client_address_only(echo_backend):
    seen = echoed("/v1/models", key=KEY, headers={"X-Forwarded-For": "203.0.113.9"})
    assert seen["headers"]["X-Forwarded-For"] == address(CLIENT)
    assert "203.0.113.9" not in json.dumps(seen)


@pytest.mark.parametrize("raw", ["/health", "/metrics/../health", "/v1/../health", "//health"])
def test_health_reaches_the_engine_as_health_only(echo_backend, raw):
    assert echoed(raw)["path"] == "/health"


def test_realtime_passes_the_websocket_upgrade(echo_backend):
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade"}
    seen = echoed("/v1/realtime", key=KEY, headers=upgrade)
    assert seen["path"] == "/v1/realtime"
    assert seen["headers"]["Upgrade"] == "websocket"
    assert seen["headers"]["Connection"].lower() == "upgrade"
    # Other paths pass no Upgrade on (h2c smuggling), and keep the upstream connection alive.
    other = echoed("/v1/models", key=KEY, headers={"Upgrade": "h2c", "Connection": "Upgrade"})
    assert "Upgrade" not in other["headers"]
