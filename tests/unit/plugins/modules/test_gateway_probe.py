# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.gateway_probe module: main() against a local HTTP server that
answers as the gateway does (/health without a key, /v1/models only with the right key)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import gateway_probe

KEY = "k" * 40


class Gateway(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            status = 200
        elif self.path == "/v1/models":
            status = 200 if self.headers.get("Authorization") == f"Bearer {KEY}" else 401
        else:
            status = 404
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_args):
        pass


@pytest.fixture
def gateway():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gateway_probe.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_health_and_models_with_the_key(capsys, gateway):
    rc, out = run(capsys, {"instances": [{"name": "chat", "url": gateway, "key": KEY},
                                         {"name": "wrong", "url": gateway, "key": "x" * 40}]})
    assert rc == 0 and out["changed"] is False
    assert out["instances"] == [{"name": "chat", "health": 200, "models": 200},
                                {"name": "wrong", "health": 200, "models": 401}]
    assert out["failing"] == ["wrong"]
    assert KEY not in json.dumps(out)


def test_no_answer_fails_with_the_fix(capsys):
    rc, out = run(capsys, {"instances": [{"name": "chat", "url": "http://127.0.0.1:9"}], "timeout": 2,
                           "fail_on_error": True})
    assert rc == 1
    assert out["msg"].startswith("instance(s) chat do not answer 200 through the gateway: chat: /health -1")
    assert "Fix: look at journalctl -u volta-<instance>" in out["msg"]
