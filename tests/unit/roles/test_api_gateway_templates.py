# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/api_gateway/templates rendered with Ansible's templating, read as nginx would.

The review's holes: /metrics matched exactly while vLLM serves ^/metrics(.*)$ (so /metrics/ and
/metricsX skipped the allow-list); /health passed the client's raw URI on (a raw
/metrics/../health is /health to nginx and a metrics path to vLLM: metrics without the key);
X-Forwarded-For appended the client's own header; the server header carried nginx's version;
"bearer" in lower case was refused; requests without the key were never rate-limited.
The molecule scenario `serving` checks the same against nginx from another container.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROLE = Path(__file__).resolve().parents[3] / "roles" / "api_gateway"
KEY = "Ab0._~+/=-" * 4
# A listener of the serving plan (module_utils/_services.listeners): one instance's own port.
LISTENER = {"port": 8001, "name": "chat", "kind": "instance", "engine": "vllm", "served_model_name": "lab-chat",
            "key_name": "chat", "key_instance": "chat", "health_path": "/health",
            "backends": [{"instance": "chat", "address": "127.0.0.1", "port": 18001, "rotation_file": None}]}
# A service of two replicas on port 8000.
SERVICE = {"port": 8000, "name": "lab-chat", "kind": "service", "engine": "vllm", "served_model_name": "lab-chat",
           "key_name": "lab-chat", "key_instance": "chat", "health_path": "/health",
           "backends": [{"instance": "chat", "address": "127.0.0.1", "port": 18001,
                         "rotation_file": "/etc/nginx/volta/rotation/8000-chat.conf"},
                        {"instance": "chat-b", "address": "127.0.0.1", "port": 18002,
                         "rotation_file": "/etc/nginx/volta/rotation/8000-chat-b.conf"}]}


def render(name, **changes):
    variables = {
        **yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
        "ansible_managed": "managed",
        "__api_gateway_keys_conf": "/etc/nginx/volta/keys.conf",
        "__api_gateway_tls_dir": "/etc/nginx/volta/tls",
        "__api_gateway_listen_prefix": "",
        "__api_gateway_tls": False,
        "__api_gateway_listeners": [LISTENER],
        "_api_keys_instance_keys": {"chat": KEY},
        "__api_gateway_auth_scheme_re": yaml.safe_load((ROLE / "vars" / "main.yml").read_text())[
            "__api_gateway_auth_scheme_re"
        ],
        "api_gateway_metrics_allow": ["10.0.0.0/8"],
        **changes,
    }
    variables.pop("api_gateway_public_host")
    text = (ROLE / "templates" / name).read_text()
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(text))


def blocks(conf):
    """location -> its body (the lines up to the closing brace at the location's indent)."""
    out = {}
    for match in re.finditer(r"^    location ([^{]+?) \{\n(.*?)^    \}", conf, re.M | re.S):
        out[match.group(1)] = match.group(2)
    return out


@pytest.fixture(scope="module")
def gateway():
    return render("gateway.conf.j2")


def test_metrics_is_a_prefix_location_with_allow_list_and_key(gateway):
    locations = blocks(gateway)
    assert "= /metrics" not in locations
    body = locations["/metrics"]
    assert body.index("allow 10.0.0.0/8;") < body.index("deny all;")
    # The port's key or the metrics-only key (hole 4: Prometheus scraped with an inference key).
    assert "if ($volta_metrics_8001 = 0) {\n            return 401;" in body
    assert 'map "$volta_key_8001$volta_metrics_key" $volta_metrics_8001 {\n    default 1;\n    "00" 0;\n}' in gateway


def test_health_pins_the_uri_and_is_the_only_location_without_key(gateway):
    locations = blocks(gateway)
    assert locations["= /health"].strip() == "proxy_pass http://volta_8001/health;"
    keyless = [name for name, body in locations.items()
               if "proxy_pass" in body and "$volta_key_8001 = 0" not in body
               and "$volta_metrics_8001 = 0" not in body]  # fmt: skip
    assert keyless == ["= /health"]


def test_forwarded_for_is_the_client_address_only(gateway):
    assert "$proxy_add_x_forwarded_for" not in gateway
    assert "    proxy_set_header X-Forwarded-For $remote_addr;\n" in gateway
    assert "X-Forwarded-For $remote_addr;" in blocks(gateway)["/v1/realtime"]


def test_no_version_in_the_server_header(gateway):
    assert "\n    server_tokens off;\n" in gateway


def test_realtime_passes_a_websocket_upgrade_with_the_key(gateway):
    body = blocks(gateway)["/v1/realtime"]
    assert "$volta_key_8001 = 0" in body
    assert "proxy_set_header Upgrade $volta_upgrade;" in body
    assert "proxy_set_header Connection $volta_connection;" in body
    assert '"~*^websocket$" websocket;' in gateway
    # Elsewhere no Upgrade is passed on (h2c smuggling), and Connection stays empty for keep-alive.
    assert gateway.count("proxy_set_header Upgrade") == 1
    assert '    proxy_set_header Connection "";\n' in gateway


def test_requests_without_the_key_are_rate_limited(gateway):
    assert "limit_req_zone $binary_remote_addr zone=volta_unauthorized:1m rate=30r/m;" in gateway
    assert "error_page 401 @volta_unauthorized;" in gateway
    named = blocks(gateway)["@volta_unauthorized"]
    # limit_req (preaccess) must run before the 401 is sent: the answer comes from precontent on.
    assert "limit_req zone=volta_unauthorized burst=20 nodelay;" in named
    assert "limit_req_status 429;" in named
    assert "return" not in named
    assert "try_files /.volta-no-such-file @volta_401;" in named
    # OpenAI's error format, the message naming what was wrong (tests/unit/roles/test_api_gateway_errors.py serves it).
    assert '"message": "$volta_unauthorized_message", "type": "authentication_error"' in blocks(gateway)["@volta_401"]
    assert "WWW-Authenticate" in blocks(gateway)["@volta_401"]
    # Every keyed location answers 401 without a body, so that error_page takes it.
    assert gateway.count("            return 401;\n") == 3


def test_rate_and_burst_come_from_the_role_variables():
    conf = render("gateway.conf.j2", api_gateway_unauthorized_rate="2r/s", api_gateway_unauthorized_burst=0)
    assert "rate=2r/s;" in conf
    assert "burst=0 nodelay;" in conf


def key_pattern():
    conf = render("keys.conf.j2")
    [pattern] = re.findall(r'^    "~(.*)" 1;$', conf, re.M)
    return pattern


@pytest.mark.parametrize("header", [f"Bearer {KEY}", f"bearer {KEY}", f"BEARER {KEY}", f"bEaReR {KEY}"])
def test_scheme_in_any_case_with_the_exact_key(header):
    # nginx's PCRE and Python's re read this pattern alike (anchors, (?i:...), escapes).
    assert re.search(key_pattern(), header)


@pytest.mark.parametrize(
    "header",
    [f"Bearer {KEY.upper()}", f"Bearer {KEY}x", f"Bearer  {KEY}", f"Basic {KEY}", f"Bearer{KEY}", KEY,
     f"Bearer {KEY[:-1]}", f"xBearer {KEY}"],
)  # fmt: skip
def test_anything_else_is_not_the_key(header):
    # Two spaces: vLLM (partition(" ")) would compare " <key>" and refuse it, so nginx refuses too.
    assert not re.search(key_pattern(), header)


def upstream(conf, port):
    match = re.search(rf"^upstream volta_{port} \{{\n(.*?)^\}}", conf, re.M | re.S)
    assert match, conf
    return [line.strip() for line in match.group(1).splitlines() if line.strip()]


def test_an_instance_port_has_one_server_and_no_retry():
    conf = render("gateway.conf.j2", __api_gateway_listeners=[LISTENER])
    assert upstream(conf, 8001) == ["server 127.0.0.1:18001;", "keepalive 16;"]
    assert "proxy_next_upstream" not in conf
    assert "keepalive_timeout" not in conf


def test_a_service_balances_over_the_rotation_files_of_its_replicas():
    conf = render("gateway.conf.j2", __api_gateway_listeners=[SERVICE, LISTENER])
    assert upstream(conf, 8000) == [
        "least_conn;",
        "include /etc/nginx/volta/rotation/8000-chat.conf;",
        "include /etc/nginx/volta/rotation/8000-chat-b.conf;",
        "keepalive 16;",
    ]
    service = conf[conf.index("listen 8000;"):conf.index("listen 8001;")]
    assert "proxy_next_upstream error timeout;" in service
    assert "proxy_next_upstream_tries 2;" in service
    assert "keepalive_timeout 0;" in service
    assert "access_log /var/log/nginx/volta-service-8000.access.log;" in service
    # Every location of the service port checks the service port's key, like an instance's.
    assert service.count("if ($volta_key_8000 = 0) {") == 2
    assert service.count("if ($volta_metrics_8000 = 0) {") == 1


def test_the_service_port_takes_the_key_of_its_replicas():
    keys = render("keys.conf.j2", __api_gateway_listeners=[SERVICE, LISTENER])
    maps = re.findall(r"map \$http_authorization \$volta_key_(\d+) \{\n    default 0;\n    \"(.*)\" 1;", keys)
    assert [entry[0] for entry in maps] == ["8000", "8001"]
    assert maps[0][1] == maps[1][1]
    assert maps[0][1].endswith(re.escape(KEY) + "$")
