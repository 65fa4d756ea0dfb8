# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/module_utils/_model_hub.py: where the operator's Hugging Face token goes, over real HTTP on loopback.

Two servers on 127.0.0.1, each on a port of its own (two origins, as huggingface.co and its CDN are):
the "hub" answers the model's information and redirects the file reads to the "cdn", and both record
the headers they receive. Before: open_url's redirect handler copied every header, Authorization
included, to the CDN, and a token was sent over plain http to any endpoint. Now the token reaches the
endpoint's origin only, and is refused over plain http except on loopback.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _model, _model_hub

TOKEN = "hf_controller_test_token_not_a_secret_0123"  # noqa: S105 - a test value, not a token
REPO = "org/tiny"
REVISION = "0123456789abcdef0123456789abcdef01234567"
CONFIG = {"architectures": ["LlamaForCausalLM"], "num_attention_heads": 8, "max_position_embeddings": 2048}
INFO = {"siblings": [{"rfilename": "config.json", "size": 90},
                     {"rfilename": "model.safetensors", "size": 1000, "lfs": {"size": 1000}}]}  # fmt: skip


class _Recorder(BaseHTTPRequestHandler):
    """Answers from the server's ``routes`` (path -> (status, headers, body)); records each request."""

    def do_GET(self):
        self.server.seen.append({"path": self.path, "authorization": self.headers.get("Authorization")})
        status, headers, body = self.server.routes(self.path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def _serve(routes):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen, server.routes = [], routes
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


@pytest.fixture
def hosts():
    """(hub, cdn): the hub answers the model's information and redirects every file to the cdn."""
    cdn = _serve(lambda path: (200, {"Content-Type": "application/json"}, json.dumps(CONFIG).encode()))
    cdn_url = f"http://127.0.0.1:{cdn.server_address[1]}"

    def hub_routes(path):
        if path.startswith("/api/models/"):
            return 200, {"Content-Type": "application/json"}, json.dumps(INFO).encode()
        if path.startswith("/same-host/"):
            return 200, {"Content-Type": "application/json"}, json.dumps(CONFIG).encode()
        if "/resolve/" in path and path.endswith("renamed.json"):
            return 307, {"Location": "/same-host/config.json"}, b""  # a relative redirect: the same origin
        return 302, {"Location": f"{cdn_url}/blob{path}"}, b""

    hub = _serve(hub_routes)
    yield hub, cdn
    for server in (hub, cdn):
        server.shutdown()
        server.server_close()


def endpoint_of(server):
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_the_token_reaches_the_endpoint_but_not_the_host_it_redirects_to(hosts):
    hub, cdn = hosts
    endpoint = endpoint_of(hub)
    read = _model_hub.urllib_reader(token=TOKEN, timeout=5, endpoint=endpoint)
    facts = _model_hub.hub_facts("/srv/m", endpoint, REPO, REVISION, (), read)
    assert facts["hub_error"] is None, facts
    assert facts["config"] == CONFIG  # read through the redirect to the second host
    assert [s["authorization"] for s in hub.seen] == [f"Bearer {TOKEN}"] * len(hub.seen)
    assert cdn.seen, "the file read was not redirected to the second host"
    # Before: open_url's redirect handler copied the header, and the token arrived here.
    assert [s["authorization"] for s in cdn.seen] == [None] * len(cdn.seen)


def test_a_redirect_on_the_same_origin_keeps_the_token(hosts):
    hub, cdn = hosts
    endpoint = endpoint_of(hub)
    read = _model_hub.urllib_reader(token=TOKEN, timeout=5, endpoint=endpoint)
    assert json.loads(read(_model_hub.file_url(endpoint, REPO, REVISION, "renamed.json"))) == CONFIG
    assert [s["path"] for s in hub.seen][-1] == "/same-host/config.json"
    assert {s["authorization"] for s in hub.seen} == {f"Bearer {TOKEN}"}
    assert cdn.seen == []


def test_gather_gives_the_reader_the_endpoint(hosts, tmp_path):
    hub, cdn = hosts
    path = str(tmp_path / "m@rev")
    entry = {"path": path, "endpoint": endpoint_of(hub), "repo": REPO, "revision": REVISION,
             "allow_patterns": [], "token": TOKEN}  # fmt: skip
    out = _model_hub.gather([path], [entry], timeout=5)
    assert out[path]["config"] == CONFIG
    assert cdn.seen and all(s["authorization"] is None for s in cdn.seen)


def test_without_a_token_no_header_is_sent(hosts):
    hub, cdn = hosts
    endpoint = endpoint_of(hub)
    facts = _model_hub.hub_facts("/srv/m", endpoint, REPO, REVISION, (), _model_hub.urllib_reader(timeout=5))
    assert facts["config"] == CONFIG
    assert {s["authorization"] for s in hub.seen + cdn.seen} == {None}


def test_a_redirect_loop_is_an_error_not_a_hang():
    loop = _serve(lambda path: (302, {"Location": path}, b""))
    try:
        read = _model_hub.urllib_reader(timeout=5)
        with pytest.raises(ValueError, match="more than 10 redirects"):
            read(endpoint_of(loop) + "/x")
        assert len(loop.seen) == 11
    finally:
        loop.shutdown()
        loop.server_close()


def test_a_redirect_to_another_scheme_is_refused(hosts):
    bad = _serve(lambda path: (302, {"Location": "file:///etc/passwd"}, b""))
    try:
        with pytest.raises(ValueError, match="is not an http"):
            _model_hub.urllib_reader(timeout=5)(endpoint_of(bad) + "/x")
    finally:
        bad.shutdown()
        bad.server_close()


@pytest.mark.parametrize("endpoint", ["http://hf-mirror.example", "http://10.0.0.5:8080", "ftp://hub.example"])
def test_a_token_is_never_sent_over_plain_http_to_another_host(endpoint):
    # Refused before any connection: the host does not exist, and no request is made.
    read = _model_hub.urllib_reader(token=TOKEN, timeout=1, endpoint=endpoint)
    with pytest.raises(ValueError) as raised:
        read(_model_hub.info_url(endpoint, REPO, REVISION))
    assert "model_hf_endpoint" in str(raised.value)
    assert TOKEN not in str(raised.value)


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("https://huggingface.co", None),
        ("https://hf-mirror.example:8443/", None),
        ("http://127.0.0.1:8080", None),
        ("http://[::1]:8080", None),
        ("http://localhost:8080", None),
        ("http://hf-mirror.example", "is plain http to a host other than this machine"),
        ("http://10.0.0.5", "is plain http to a host other than this machine"),
        ("http://127.0.0.1.evil.example", "is plain http to a host other than this machine"),
        ("hf-mirror.example", "is not an http(s) URL"),
        ("", "is not an http(s) URL"),
    ],
)  # fmt: skip
def test_token_transport_problem(endpoint, problem):
    assert _model.token_transport_problem(endpoint) == problem


@pytest.mark.parametrize("root", [7, ["/srv/models"], True, {"a": 1}])
@pytest.mark.parametrize("endpoint", [None, 7, ["https://huggingface.co"], "hf-mirror.example"])
def test_preflight_reads_never_raise_on_a_root_or_endpoint_of_the_wrong_type(root, endpoint):
    # Before: model_root: 7 raised TypeError in the filter preflight_model_reads (preflight's model read).
    models = {"qwen": {"hf": {"repo": REPO, "revision": REVISION, "token": TOKEN}}}
    instances = [{"name": "chat", "model_source": "qwen"}, {"name": "b", "model": "/srv/models/b"}]
    assert _model_hub.preflight_reads(instances, models, root, endpoint) == {
        "paths": ["/srv/models/b"], "hub": [], "pending": []}


@pytest.mark.parametrize("endpoint", [7, ["https://huggingface.co"], "hf-mirror.example"])
def test_a_hub_read_from_an_endpoint_of_the_wrong_type_is_a_fact_not_a_crash(endpoint, tmp_path):
    entry = {"path": str(tmp_path / "m"), "endpoint": endpoint, "repo": REPO, "revision": REVISION,
             "allow_patterns": [], "token": TOKEN}  # fmt: skip
    facts = _model_hub.gather([], [entry], timeout=1)[entry["path"]]
    assert facts["exists"] is False and "is not an http(s) URL" in facts["hub_error"]
    assert TOKEN not in facts["hub_error"]
