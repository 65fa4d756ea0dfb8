"""The gateway's locations against the routes and the key check of the real vLLM 0.21.0 wheel.

vLLM mounts its Prometheus app with a path_regex that takes every path starting with /metrics,
checks the key only on paths starting with /v1, splits the Authorization header at its first space
and compares the scheme lowered, and serves its Realtime API as a WebSocket on /v1/realtime. The
gateway (roles/api_gateway/templates/gateway.conf.j2, keys.conf.j2) must cover exactly that.
"""

import re
from pathlib import Path

import pytest
import yaml
from artifacts import fetch, member

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "roles" / "api_gateway" / "templates"
VERSION = "0.21.0"
KEY = "0123456789abcdef" * 4


@pytest.fixture(scope="module")
def wheel():
    return fetch("vllm", VERSION)


def _source(wheel, suffix):
    return member(wheel, suffix).decode("utf-8")


def test_every_metrics_path_of_vllm_is_the_gateways_metrics_location(wheel):
    source = _source(wheel, "vllm/entrypoints/serve/instrumentator/metrics.py")
    [pattern] = re.findall(r'path_regex = re\.compile\("([^"]+)"\)', source)
    assert pattern.startswith("^/metrics"), pattern
    route = re.compile(pattern)
    for path in ("/metrics", "/metrics/", "/metricsX", "/metrics/../health"):
        assert route.match(path), path
    # nginx's prefix location /metrics takes every path the route can match; an exact one did not.
    conf = (TEMPLATES / "gateway.conf.j2").read_text()
    assert "    location /metrics {\n" in conf
    assert "location = /metrics" not in conf


def test_vllm_checks_the_key_on_v1_only(wheel):
    source = _source(wheel, "vllm/entrypoints/openai/server_utils.py")
    assert 'url_path.startswith("/v1")' in source
    # So the gateway keys every path itself: only /health is keyless, pinned to /health.
    conf = (TEMPLATES / "gateway.conf.j2").read_text()
    assert "    location = /health {\n        proxy_pass http://volta_{{ l['port'] }}/health;\n" in conf


def _vllm_accepts(header):
    # The rule read from server_utils.py below: scheme before the first space, lowered; the rest is the key.
    scheme, _sep, param = header.partition(" ")
    return scheme.lower() == "bearer" and param == KEY


@pytest.mark.parametrize(
    "header",
    [f"Bearer {KEY}", f"bearer {KEY}", f"BEARER {KEY}", f"Bearer  {KEY}", f"Bearer {KEY} ", f"Basic {KEY}",
     f"Bearer {KEY.upper()}", f"Bearer\t{KEY}", KEY],
)  # fmt: skip
def test_the_gateway_accepts_the_headers_vllm_accepts(wheel, header):
    source = _source(wheel, "vllm/entrypoints/openai/server_utils.py")
    assert 'scheme, _, param = authorization_header_value.partition(" ")' in source
    assert 'if scheme.lower() != "bearer":' in source
    scheme_re = yaml.safe_load((ROOT / "roles" / "api_gateway" / "vars" / "main.yml").read_text())[
        "__api_gateway_auth_scheme_re"
    ]
    keys_conf = (TEMPLATES / "keys.conf.j2").read_text()
    line = ("\"~^{{ __api_gateway_auth_scheme_re }} "
            "{{ _api_keys_instance_keys[l['key_instance']] | regex_escape }}$\"")
    assert line in keys_conf
    gateway = re.compile(f"^{scheme_re} {re.escape(KEY)}$")
    assert bool(gateway.search(header)) == _vllm_accepts(header)


def test_realtime_is_a_websocket_on_v1_realtime(wheel):
    source = _source(wheel, "vllm/entrypoints/openai/realtime/api_router.py")
    assert '@router.websocket("/v1/realtime")' in source
    conf = (TEMPLATES / "gateway.conf.j2").read_text()
    assert "    location /v1/realtime {\n" in conf
