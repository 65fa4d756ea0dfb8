# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/api_gateway's nginx configuration run by the real nginx of the controller, on loopback only.

Hole 4 of issue 52: Prometheus scraped each gateway with a full inference key, over plain HTTP. The gateway now
takes a metrics-only key (api_gateway_metrics_key) on its metrics paths and nowhere else. Both templates are
rendered as the role renders them, checked with ``nginx -t`` and then served by nginx in front of a stand-in
engine on loopback: the metrics key reads /metrics and gets 401 on every inference path, the inference key
still works everywhere. Skipped where nginx is not installed.
"""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_api_gateway_templates import KEY, LISTENER, render  # the same directory (pytest prepends it)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
METRICS_KEY = "Mk0._~+/=-" * 4
pytestmark = pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Engine(http.server.BaseHTTPRequestHandler):
    """The stand-in engine: 200 with the path for every GET."""

    def do_GET(self):
        body = f"engine {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def _write_conf(tmp, port, backend, **changes):
    """nginx.conf (prefix *tmp*) around the role's two files, logs under *tmp*; returns its path."""
    listener = {**LISTENER, "port": port, "backends": [{**LISTENER["backends"][0], "port": backend}]}
    keys_conf = tmp / "keys.conf"
    variables = {"__api_gateway_listeners": [listener], "__api_gateway_keys_conf": str(keys_conf),
                 "__api_gateway_listen_prefix": "127.0.0.1:", "api_gateway_metrics_allow": ["127.0.0.1"], **changes}
    keys_conf.write_text(render("keys.conf.j2", **variables))
    gateway = render("gateway.conf.j2", **variables).replace("/var/log/nginx/", f"{tmp}/")
    (tmp / "gateway.conf").write_text(gateway)
    conf = tmp / "nginx.conf"
    conf.write_text(f"pid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\nevents {{}}\nhttp {{\n"
                    f"    access_log off;\n    client_body_temp_path {tmp}/body;\n    proxy_temp_path {tmp}/proxy;\n"
                    f"    include {tmp}/gateway.conf;\n}}\n")
    return conf


def _nginx_t(tmp, conf):
    return subprocess.run([NGINX, "-t", "-p", str(tmp), "-c", str(conf)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("metrics_key", ["", METRICS_KEY])
def test_nginx_accepts_the_gateway_with_and_without_a_metrics_key(tmp_path, metrics_key):
    conf = _write_conf(tmp_path, _free_port(), _free_port(), api_gateway_metrics_key=metrics_key)
    result = _nginx_t(tmp_path, conf)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """nginx serving the gateway on 127.0.0.1 in front of the stand-in engine; yields the base URL."""
    tmp = tmp_path_factory.mktemp("gateway")
    engine = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    threading.Thread(target=engine.serve_forever, daemon=True).start()
    port = _free_port()
    conf = _write_conf(tmp, port, engine.server_address[1], api_gateway_metrics_key=METRICS_KEY)
    checked = _nginx_t(tmp, conf)
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(conf), "-g", "daemon off; master_process off;"],
                             stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _attempt in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    yield base
    nginx.terminate()
    nginx.wait(timeout=10)
    engine.shutdown()


def _status(url, key=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - a loopback URL of the test
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.parametrize("path", ["/metrics", "/metrics/", "/metricsX"])
def test_the_metrics_key_reads_the_metrics_paths(gateway, path):
    assert _status(gateway + path, METRICS_KEY) == 200


@pytest.mark.parametrize("path", ["/v1/models", "/v1/chat/completions", "/v1/realtime", "/tokenize", "/",
                                  "/metrics/../v1/models"])
def test_the_metrics_key_opens_no_inference_path(gateway, path):
    assert _status(gateway + path, METRICS_KEY) == 401


@pytest.mark.parametrize("path", ["/v1/models", "/metrics", "/tokenize"])
def test_the_inference_key_still_opens_every_path(gateway, path):
    assert _status(gateway + path, KEY) == 200


@pytest.mark.parametrize("path", ["/metrics", "/v1/models"])
def test_no_key_or_a_wrong_key_is_refused(gateway, path):
    assert _status(gateway + path) == 401
    assert _status(gateway + path, METRICS_KEY + "x") == 401
