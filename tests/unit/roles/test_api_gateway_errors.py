# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every error the gateway's nginx makes itself, in OpenAI's error format, with a message that says what to do.

Issue 53: the gateway answered 401 with ``{"error": "Unauthorized"}``, so the official ``openai`` client said
"Error code: 401" and nothing else. The client reads ``body["error"]["message"]`` (openai-python
``_base_client.py`` ``_make_status_error_from_response``), so each error nginx makes (401 without a key or with
a wrong one, 403 metrics from an address not allowed, 413 body too large, 429 past the limit of requests
without the key, 502 engine down, 504 engine too slow) is now
``{"error": {"message": ..., "type": ..., "param": null, "code": <status>}}`` as application/json; what the
ENGINE answers (its own 4xx/5xx JSON) passes through unchanged (proxy_intercept_errors off).

The role's templates are rendered as the role renders them and served by the real nginx on loopback in front
of a stand-in engine; the client checks run the real ``openai`` client of the lab's pinned version
(tests/lab/probe/openai_venv.py, its cached venv) in a subprocess. Skipped where nginx is not installed.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from test_api_gateway_templates import KEY, LISTENER, render  # the same directory (pytest prepends it)

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
MIME_TYPES = Path("/etc/nginx/mime.types")
PROBE = Path(__file__).resolve().parents[2] / "lab" / "probe"
ROUTER = Path(__file__).resolve().parents[3] / "roles" / "router"
BOTH = pytest.mark.parametrize("nginx", ["gateway", "router"])
pytestmark = pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed")

# The engine's own errors, as vLLM writes them (ErrorResponse) and as its API-key middleware does: the gateway
# passes them on byte for byte.
ENGINE_ERRORS = {
    404: b'{"error":{"message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}}',
    401: b'{"error":"Unauthorized"}',
    502: b'{"error":{"message":"its engine is down","type":"unavailable_error","param":null,"code":502}}',
    503: b'{"error":{"message":"engine busy","type":"ServiceUnavailableError","param":null,"code":503}}',
}
# Requests from these loopback addresses: 429 is counted per client address, 403 needs one not allowed.
LIMITED_CLIENT = "127.0.0.3"
METRICS_STRANGER = "127.0.0.2"


class _Engine(http.server.BaseHTTPRequestHandler):
    """The stand-in engine: /slow answers after 3 s, /engine-error/<status> its own error, the rest 200."""

    protocol_version = "HTTP/1.1"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        status, body = 200, json.dumps({"path": self.path}).encode()
        if self.path == "/slow":
            time.sleep(3)
        elif self.path.startswith("/engine-error/"):
            status = int(self.path.rsplit("/", 1)[1])
            body = ENGINE_ERRORS[status]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _answer
    do_POST = _answer

    def log_message(self, *_args):
        pass


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listener(port, backend):
    return {**LISTENER, "port": port, "backends": [{**LISTENER["backends"][0], "port": backend}]}


def _write_conf(tmp, listeners, **changes):
    """nginx.conf (prefix *tmp*) around the role's two files, as a host's nginx.conf has them (mime.types)."""
    keys_conf = tmp / "keys.conf"
    variables = {"__api_gateway_listeners": listeners, "__api_gateway_keys_conf": str(keys_conf),
                 "__api_gateway_listen_prefix": "127.0.0.1:", "api_gateway_metrics_allow": ["127.0.0.1"], **changes}
    keys_conf.write_text(render("keys.conf.j2", **variables))
    gateway = render("gateway.conf.j2", **variables).replace("/var/log/nginx/", f"{tmp}/")
    (tmp / "gateway.conf").write_text(gateway)
    mime = f"    include {MIME_TYPES};\n" if MIME_TYPES.exists() else ""
    conf = tmp / "nginx.conf"
    conf.write_text(f"pid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\nevents {{}}\nhttp {{\n{mime}"
                    f"    access_log off;\n    client_body_temp_path {tmp}/body;\n    proxy_temp_path {tmp}/proxy;\n"
                    f"    include {tmp}/gateway.conf;\n}}\n")
    return conf


@pytest.fixture(scope="module")
def engine():
    """The stand-in engine on loopback; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@contextlib.contextmanager
def _serve(tmp, conf, ports):
    """nginx -t, then nginx serving *conf* for the block (entered once all *ports* answer)."""
    checked = subprocess.run([NGINX, "-t", "-p", str(tmp), "-c", str(conf)], capture_output=True, text=True,
                             check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    nginx = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(conf), "-g", "daemon off; master_process off;"],
                             stderr=subprocess.PIPE)
    for port in ports:
        for _attempt in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
    try:
        yield
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def _router_conf(tmp, services, **settings):
    """nginx.conf around roles/router's two templates as the role renders them, logs under *tmp*."""
    variables = {
        **yaml.safe_load((ROUTER / "defaults" / "main.yml").read_text()),
        "ansible_managed": "managed",
        "__router_keys_conf": str(tmp / "keys.conf"),
        "__router_listen_prefix": "127.0.0.1:",
        "__router_auth_scheme_re": yaml.safe_load((ROUTER / "vars" / "main.yml").read_text())[
            "__router_auth_scheme_re"
        ],
        "__router_services": services,
        **settings,
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    for name in ("router.conf", "keys.conf"):
        text = templar.template(trust_as_template((ROUTER / "templates" / f"{name}.j2").read_text()))
        (tmp / name).write_text(text.replace("/var/log/nginx/", f"{tmp}/"))
    mime = f"    include {MIME_TYPES};\n" if MIME_TYPES.exists() else ""
    conf = tmp / "nginx.conf"
    conf.write_text(f"pid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\nevents {{}}\nhttp {{\n{mime}"
                    f"    access_log off;\n    client_body_temp_path {tmp}/body;\n    proxy_temp_path {tmp}/proxy;\n"
                    f"    include {tmp}/router.conf;\n}}\n")
    return conf


def _router_service(tmp, port, backend):
    """One service of the router's plan: router port *port* -> one host's gateway on *backend*."""
    rotation = tmp / f"{port}-gpu-a.conf"
    rotation.write_text(f"server 127.0.0.1:{backend} max_fails=1 fail_timeout=10s;\n")
    return {"kind": "service", "name": "lab-chat", "port": port, "key": KEY,
            "backends": [{"id": "gpu-a", "host": "gpu-a", "address": "127.0.0.1", "port": backend,
                          "rotation_file": str(rotation)}]}  # fmt: skip


@pytest.fixture(scope="module")
def servers(tmp_path_factory, engine):
    """The gateway and the router served by nginx, each {"live": port in front of the stand-in engine, "dead": port
    whose engine (for the router: whose every host) is down}, 1k bodies at most and 1 s for an answer."""
    tmp = tmp_path_factory.mktemp("gateway-errors")
    gateway = {"live": _free_port(), "dead": _free_port()}
    listeners = [_listener(gateway["live"], engine), _listener(gateway["dead"], _free_port())]
    conf = _write_conf(tmp, listeners, api_gateway_client_max_body_size="1k", api_gateway_proxy_read_timeout=1)
    tmp = tmp_path_factory.mktemp("router-errors")
    router = {"live": _free_port(), "dead": _free_port()}
    services = [_router_service(tmp, router["live"], engine), _router_service(tmp, router["dead"], _free_port())]
    router_conf = _router_conf(tmp, services, router_client_max_body_size="1k", router_proxy_read_timeout=1)
    with _serve(conf.parent, conf, gateway.values()), _serve(tmp, router_conf, router.values()):
        yield {"gateway": gateway, "router": router}


def _request(port, path, key=None, method="GET", body=None, source="127.0.0.1", headers=None):
    """(status, headers, body bytes) of one request to the gateway on *port*, sent from *source*."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    sent = {**({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})}
    try:
        conn.request(method, path, body=body, headers=sent)
        answer = conn.getresponse()
        return answer.status, answer.headers, answer.read()
    finally:
        conn.close()


def _openai_error(answer, status, kind, words):
    """The answer is OpenAI's error shape as application/json, *status* in code, its message holding *words*."""
    status_got, headers, body = answer
    assert status_got == status, body
    assert headers["Content-Type"] == "application/json", headers
    assert body.endswith(b"\n")
    error = json.loads(body)["error"]
    assert list(error) == ["message", "type", "param", "code"], error
    assert (error["type"], error["param"], error["code"]) == (kind, None, status), error
    assert words in error["message"], error
    return error


@BOTH
def test_no_key_is_401_that_says_how_to_send_the_key(servers, nginx):
    # .html: the host's nginx.conf maps extensions to types (mime.types), the error stays JSON.
    answer = _request(servers[nginx]["live"], "/v1/index.html")
    error = _openai_error(answer, 401, "authentication_error", "No API key was sent")
    assert "Authorization: Bearer <key>" in error["message"]
    assert answer[1]["WWW-Authenticate"] == 'Bearer realm="volta"'


@BOTH
@pytest.mark.parametrize("path", ["/v1/models", "/metrics", "/v1/realtime"])
@pytest.mark.parametrize("header", [f"Bearer {KEY}x", f"Basic {KEY}", "Bearer"], ids=["wrong", "basic", "no-key"])
def test_a_wrong_key_is_401_that_says_the_key_is_not_this_services(servers, nginx, path, header):
    if (nginx, path) == ("router", "/metrics"):
        pytest.skip("the router serves no metrics: 404 whatever the key")
    answer = _request(servers[nginx]["live"], path, headers={"Authorization": header})
    error = _openai_error(answer, 401, "authentication_error", "not the API key of this service")
    assert "Authorization: Bearer <key>" in error["message"]
    assert KEY not in error["message"]
    assert answer[1]["WWW-Authenticate"] == 'Bearer realm="volta"'


def test_gateway_metrics_from_an_address_not_allowed_is_403(servers):
    answer = _request(servers["gateway"]["live"], "/metrics", key=KEY, source=METRICS_STRANGER)
    _openai_error(answer, 403, "permission_error", "api_gateway_metrics_allow")


@pytest.mark.parametrize("path", ["/metrics", "/metrics/x"])
def test_router_metrics_are_404_that_says_where_they_are(servers, path):
    _openai_error(_request(servers["router"]["live"], path, key=KEY), 404, "not_found_error", "gateway of each host")


@BOTH
def test_a_body_too_large_is_413_that_names_the_limit(servers, nginx):
    answer = _request(servers[nginx]["live"], "/v1/chat/completions", key=KEY, method="POST", body=b"x" * 4096,
                      headers={"Content-Type": "application/json"})  # fmt: skip
    _openai_error(answer, 413, "invalid_request_error", "larger than 1k")


@BOTH
def test_past_the_limit_of_requests_without_the_key_is_429(servers, nginx):
    # 30r/m with bursts of 20 (the roles' defaults), from a client address of its own.
    live = servers[nginx]["live"]
    answers = [_request(live, "/v1/models", key="wrong", source=LIMITED_CLIENT) for _attempt in range(25)]
    assert [a[0] for a in answers[:5]] == [401] * 5
    error = _openai_error(answers[-1], 429, "rate_limit_error", "Too many requests without the API key")
    assert "Authorization: Bearer <key>" in error["message"]
    # Requests with the key from that client are never limited.
    assert _request(live, "/v1/models", key=KEY, source=LIMITED_CLIENT)[0] == 200


@BOTH
@pytest.mark.parametrize("path", ["/v1/models", "/health"])
def test_an_engine_that_is_down_is_502_retry_in_a_few_seconds(servers, nginx, path):
    answer = _request(servers[nginx]["dead"], path, key=KEY)
    _openai_error(answer, 502, "unavailable_error", "retry in a few seconds")


@BOTH
def test_an_engine_too_slow_is_504_that_names_the_timeout(servers, nginx):
    _openai_error(_request(servers[nginx]["live"], "/slow", key=KEY), 504, "timeout_error", "within 1 s")


@BOTH
@pytest.mark.parametrize("status", sorted(ENGINE_ERRORS))
def test_the_engines_own_errors_pass_unchanged(servers, nginx, status):
    # A 502 a host's gateway answers (its engine is down) reaches the client through the router as it was.
    code, headers, body = _request(servers[nginx]["live"], f"/engine-error/{status}", key=KEY)
    assert (code, body) == (status, ENGINE_ERRORS[status])
    assert "WWW-Authenticate" not in headers


# -- the official openai client -----------------------------------------------------------------------------

CLIENT = """
import json, sys
import openai
base, key, call = sys.argv[1:]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=10)
try:
    if call == "models":
        client.models.list()
    else:
        client.chat.completions.create(model="lab-chat", messages=[{"role": "user", "content": "x" * 4096}])
except openai.APIStatusError as exc:
    print(json.dumps({"class": type(exc).__name__, "str": str(exc), "status": exc.status_code}))
"""


@pytest.fixture(scope="module")
def openai_python():
    """The interpreter of the cached venv of the real openai client at the lab's pinned version."""
    sys.path.insert(0, str(PROBE))
    try:
        import openai_venv  # tests/lab/probe is not a package: on the path for this import only
    finally:
        sys.path.remove(str(PROBE))
    return str(openai_venv.venv() / "bin" / "python")


@pytest.mark.parametrize(
    ("nginx", "port", "key", "call", "raised", "words"),
    [("gateway", "live", "wrong", "models", "AuthenticationError", "not the API key of this service"),
     ("gateway", "live", KEY, "chat", "APIStatusError", "larger than 1k"),
     ("gateway", "dead", KEY, "models", "InternalServerError", "retry in a few seconds"),
     ("router", "live", "wrong", "models", "AuthenticationError", "not the API key of this service"),
     ("router", "dead", KEY, "models", "InternalServerError", "retry in a few seconds")],
    ids=["gateway-401", "gateway-413", "gateway-502", "router-401", "router-502"],
)  # fmt: skip
def test_the_openai_client_shows_the_message(servers, openai_python, nginx, port, key, call, raised, words):
    base = f"http://127.0.0.1:{servers[nginx][port]}/v1"
    run = subprocess.run([openai_python, "-c", CLIENT, base, key, call], capture_output=True, text=True, check=False,
                         timeout=60)  # fmt: skip
    assert run.returncode == 0, run.stderr
    error = json.loads(run.stdout)
    assert error["class"] == raised, error
    assert words in error["str"], error
