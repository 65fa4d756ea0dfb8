# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.gateway_rotation module: main() on a temporary rotation file.

nginx's check and reload are shell commands that log their calls; the engine's /metrics is a real HTTP
server on loopback that answers what the test sets (vLLM's gauge names, as the real server writes them).
The molecule scenario `replicas` drains real replicas behind real nginx.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import gateway_rotation

IN = "server 127.0.0.1:18001 max_fails=1 fail_timeout=5s;\n"
DOWN = "server 127.0.0.1:18001 down;\n"


class Metrics(BaseHTTPRequestHandler):
    # What the engine holds: each read takes the next value, the last one stays.
    counts: ClassVar[list] = [0]
    seen_keys: ClassVar[list] = []

    def do_GET(self):
        self.seen_keys.append(self.headers.get("Authorization"))
        value = self.counts.pop(0) if len(self.counts) > 1 else self.counts[0]
        body = (f'vllm:num_requests_running{{engine="0",model_name="m"}} {value}.0\n'
                'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n').encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def engine():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()


@pytest.fixture
def gateway(tmp_path):
    log = tmp_path / "calls"
    rotation = tmp_path / "8000-a.conf"
    rotation.write_text(IN)
    rotation.chmod(0o640)
    return {"rotation": rotation, "log": log,
            "test": ["sh", "-c", f"echo test >> {log}"], "reload": ["sh", "-c", f"echo reload >> {log}"]}


def run(capsys, gateway, **args):
    args = {"path": str(gateway["rotation"]), "port": 18001, "test_command": gateway["test"],
            "reload_command": gateway["reload"], **args}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gateway_rotation.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def calls(gateway):
    return gateway["log"].read_text().split() if gateway["log"].exists() else []


def test_out_marks_the_replica_down_checks_reloads_and_waits_for_its_requests(capsys, gateway, engine):
    Metrics.counts = [2, 1, 0, 0]
    rc, out = run(capsys, gateway, state="out", drain={"engine": "vllm", "metrics_url": engine, "interval": 0.05})
    assert rc == 0 and out["changed"] is True
    assert (out["in_rotation"], out["in_flight_at_start"]) == (False, 2)
    assert gateway["rotation"].read_text() == DOWN
    assert oct(gateway["rotation"].stat().st_mode & 0o777) == "0o640"
    assert calls(gateway) == ["test", "reload"]


def test_in_puts_it_back_and_a_second_in_changes_nothing(capsys, gateway):
    gateway["rotation"].write_text(DOWN)
    rc, out = run(capsys, gateway, state="in")
    assert (rc, out["changed"], out["in_rotation"]) == (0, True, True)
    assert gateway["rotation"].read_text() == IN
    rc, out = run(capsys, gateway, state="in")
    assert (rc, out["changed"]) == (0, False)
    assert calls(gateway) == ["test", "reload"]


def test_a_drain_that_times_out_puts_the_replica_back_and_says_how_many_are_left(capsys, gateway, engine):
    Metrics.counts = [3]
    rc, out = run(capsys, gateway, state="out",
                  drain={"engine": "vllm", "metrics_url": engine, "timeout": 1, "interval": 0.2})
    assert rc == 1
    assert out["msg"].startswith("3 request(s) still in flight on 127.0.0.1:18001 after 1 s of draining")
    assert "It is back in rotation and was not restarted." in out["msg"]
    assert gateway["rotation"].read_text() == IN
    assert calls(gateway) == ["test", "reload", "test", "reload"]


def test_an_engine_that_does_not_answer_holds_no_request(capsys, gateway):
    rc, out = run(capsys, gateway, state="out",
                  drain={"engine": "vllm", "metrics_url": "http://127.0.0.1:9/metrics", "interval": 0.05})
    assert (rc, out["in_rotation"], out["in_flight_at_start"]) == (0, False, 0)


def test_the_key_file_is_sent_as_a_bearer_token(capsys, gateway, engine, tmp_path):
    key = tmp_path / "a.key"
    key.write_text("k" * 40 + "\n")
    Metrics.counts, Metrics.seen_keys = [0], []
    rc, _out = run(capsys, gateway, state="out",
                   drain={"engine": "vllm", "metrics_url": engine, "key_file": str(key), "interval": 0.05})
    assert rc == 0
    assert Metrics.seen_keys[0] == "Bearer " + "k" * 40


def test_a_refused_check_puts_the_old_file_back(capsys, gateway):
    rc, out = run(capsys, gateway, state="out", test_command=["sh", "-c", "echo broken >&2; exit 1"])
    assert rc == 1
    assert "failed (rc 1): broken. The rotation file was put back as it was." in out["msg"]
    assert gateway["rotation"].read_text() == IN


def test_a_service_the_gateway_does_not_serve_yet_is_left_alone(capsys, gateway, tmp_path):
    rc, out = run(capsys, gateway, state="out", path=str(tmp_path / "absent.conf"))
    assert (rc, out["changed"], out["served"]) == (0, False, False)
    assert calls(gateway) == []


def test_check_mode_writes_nothing(capsys, gateway):
    rc, out = run(capsys, gateway, state="out", _ansible_check_mode=True)
    assert (rc, out["changed"]) == (0, True)
    assert gateway["rotation"].read_text() == IN
    assert calls(gateway) == []


@pytest.fixture
def listener():
    """A real TCP listener on loopback with one client connected to it (the router's nginx to a host's gateway)."""
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    accepted, _peer = server.accept()
    yield {"port": server.getsockname()[1], "client": client}
    for sock in (client, accepted, server):
        sock.close()


def test_a_drain_on_connections_waits_until_this_host_holds_none_to_the_address(capsys, gateway, listener):
    timer = threading.Timer(0.4, listener["client"].close)
    timer.start()
    rc, out = run(capsys, gateway, state="out",
                  drain={"connections_to": f"127.0.0.1:{listener['port']}", "interval": 0.05, "timeout": 10})
    timer.join()
    assert (rc, out["in_rotation"], out["in_flight_at_start"]) == (0, False, 1)
    assert gateway["rotation"].read_text() == DOWN


def test_a_drain_on_connections_that_times_out_says_so_and_puts_the_host_back(capsys, gateway, listener):
    rc, out = run(capsys, gateway, state="out",
                  drain={"connections_to": f"localhost:{listener['port']}", "interval": 0.1, "timeout": 1})
    assert rc == 1
    assert out["msg"].startswith(f"1 connection(s) from this host to localhost:{listener['port']} still in flight")
    assert "raise router_drain_timeout" in out["msg"]
    assert gateway["rotation"].read_text() == IN


def test_connections_to_must_be_address_and_port(capsys, gateway):
    rc, out = run(capsys, gateway, state="out", drain={"connections_to": "no-port"})
    assert rc == 1
    assert "is not ADDRESS:PORT" in out["msg"]
