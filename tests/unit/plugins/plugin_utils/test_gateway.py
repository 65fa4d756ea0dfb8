# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""api_gateway settings checked before nginx sees them (plugins/plugin_utils/_gateway.py).

The review's injections: ``64m; location /open/ { proxy_pass ...; } #`` as the body size passed
preflight and nginx -t and served a path without the key; the listen address and the /metrics
allow list were pasted unchecked. TLS with only one of certificate/key fell back to plain HTTP
without a word. Every case goes through build_report and asserts the message.
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _gateway
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
GOOD = {
    "listen_address": "",
    "client_max_body_size": "64m",
    "metrics_allow": ["10.0.0.0/8", "192.0.2.7"],
    "tls_certificate": False,
    "tls_private_key": False,
    "allow_plain_http": False,
    "firewall_enabled": True,
    "api_cidrs": ["10.0.0.0/8", "172.16.0.0/12"],
}
INJECTION = "64m; location /open/ { proxy_pass http://127.0.0.1:18001; } #"


def findings(**changes):
    gateway = {**GOOD, **changes}
    return build_report(PlanInputs("gw-host", SERVER, [], gateway=gateway))["findings"]


def test_good_settings_pass():
    assert findings() == []


def test_no_gateway_settings_means_no_gateway_checks():
    assert build_report(PlanInputs("gw-host", SERVER, []))["findings"] == []


@pytest.mark.parametrize("value", [INJECTION, "64m\n", "64 m", "64mb", "-1", "", "1t", True, None, 1.5])
def test_body_size_must_be_an_nginx_size(value):
    found = findings(client_max_body_size=value)
    assert [f["field"] for f in found] == ["api_gateway_client_max_body_size"]
    message = found[0]["message"]
    field = "api_gateway_client_max_body_size"
    assert message.startswith(f"gw-host: host-wide: field {field}: {value!r} is not an nginx size.")
    assert "Fix: write a number with an optional unit k, m or g, for example 64m." in message


@pytest.mark.parametrize("value", ["64m", "1G", "0", "1024", 1048576, "512k"])
def test_nginx_sizes_pass(value):
    assert _gateway.check_body_size("h", value) == []


@pytest.mark.parametrize(
    "value", ["10.0.0.1:8080", "10.0.0.1; server { listen 9; }", "localhost", "[::1]", "10.0.0.1\n", "0.0.0.0/0", 7]
)
def test_listen_address_must_be_an_ip_address(value):
    found = findings(listen_address=value)
    assert [f["field"] for f in found] == ["api_gateway_listen_address"]
    assert f"{value!r} is not an IP address." in found[0]["message"]
    assert 'or "" for every address.' in found[0]["message"]


@pytest.mark.parametrize("value", ["", "10.0.0.1", "::1", "2001:db8::5"])
def test_listen_addresses_pass(value):
    assert _gateway.check_listen_address("h", value) == []


@pytest.mark.parametrize(
    ("value", "field", "text"),
    [
        (["10.0.0.0/8; allow all"], "api_gateway_metrics_allow[0]", "is not an address or CIDR"),
        (["10.0.0.0/8\n"], "api_gateway_metrics_allow[0]", "contains whitespace or control characters"),
        (["10.0.0.0/8", "all"], "api_gateway_metrics_allow[1]", "is not an address or CIDR"),
        (["10.0.0.5/8"], "api_gateway_metrics_allow[0]", "is not an address or CIDR"),
        ("10.0.0.0/8", "api_gateway_metrics_allow", "is not a list."),
    ],
)
def test_metrics_allow_must_be_addresses_or_cidrs(value, field, text):
    found = findings(metrics_allow=value)
    assert [f["field"] for f in found] == [field]
    assert text in found[0]["message"]
    assert found[0]["severity"] == "error"


@pytest.mark.parametrize(("cert", "key", "missing"), [(True, False, "private_key"), (False, True, "certificate")])
def test_tls_needs_both_certificate_and_key(cert, key, missing):
    found = findings(tls_certificate=cert, tls_private_key=key)
    hits = [f for f in found if f["rule"] == "invalid-value"]
    assert [f["field"] for f in hits] == [f"api_gateway_tls_{missing}"]
    assert f"but api_gateway_tls_{missing} is not." in hits[0]["message"]
    assert "the gateway would serve the keys over plain HTTP" in hits[0]["message"]


@pytest.mark.parametrize(
    ("changes", "shown"),
    [
        ({"api_cidrs": ["0.0.0.0/0", "::/0"]}, "0.0.0.0/0, ::/0 over plain HTTP (through firewall_api_cidrs)"),
        ({"api_cidrs": ["10.0.0.0/8", "198.51.100.0/24"]},
         "198.51.100.0/24 over plain HTTP (through firewall_api_cidrs)"),
        ({"firewall_enabled": False, "api_cidrs": []},
         "0.0.0.0/0 over plain HTTP (the firewall is off: firewall_enabled: false)"),
        # Hole 4: the scrapers' networks open every gateway port too (roles/firewall), the fleet router's the
        # service ports; firewall_api_cidrs alone was counted.
        ({"metrics_cidrs": ["0.0.0.0/0"]}, "0.0.0.0/0 over plain HTTP (through firewall_metrics_cidrs)"),
        ({"router_cidrs": ["203.0.113.9"]}, "203.0.113.9 over plain HTTP (through firewall_router_cidrs)"),
        ({"api_cidrs": ["0.0.0.0/0"], "metrics_cidrs": ["0.0.0.0/0", "2001:db8::/32"]},
         "0.0.0.0/0, 2001:db8::/32 over plain HTTP (through firewall_api_cidrs and firewall_metrics_cidrs)"),
    ],
)
def test_plain_http_to_public_networks_is_refused(changes, shown):
    found = findings(**changes)
    assert [(f["rule"], f["severity"]) for f in found] == [("plain-http-public", "error")]
    assert f"the public ports are open to {shown}." in found[0]["message"]
    assert "or set api_gateway_allow_plain_http: true" in found[0]["message"]


def test_plain_http_fix_names_the_variables_to_narrow():
    message = findings(metrics_cidrs=["0.0.0.0/0"])[0]["message"]
    assert "Fix: set api_gateway_tls_certificate and api_gateway_tls_private_key, narrow firewall_metrics_cidrs " \
           "to private networks, or set api_gateway_allow_plain_http: true" in message


def test_plain_http_opt_out_is_a_warning():
    found = findings(api_cidrs=["0.0.0.0/0"], allow_plain_http=True)
    assert [(f["rule"], f["severity"]) for f in found] == [("plain-http-allowed", "warning")]
    assert "api_gateway_allow_plain_http: true says that is intended" in found[0]["message"]


@pytest.mark.parametrize(
    "changes",
    [
        {"api_cidrs": ["0.0.0.0/0"], "tls_certificate": True, "tls_private_key": True},
        {"firewall_enabled": False, "listen_address": "127.0.0.1"},
        {"api_cidrs": ["10.0.0.0/8", "fd00::/8", "100.64.0.0/10"]},
        {"metrics_cidrs": ["10.0.0.7", "fd00::/8"], "router_cidrs": ["192.168.1.2"]},
        {"metrics_cidrs": ["0.0.0.0/0"], "listen_address": "127.0.0.1"},
        {"metrics_cidrs": ["0.0.0.0/0"], "tls_certificate": True, "tls_private_key": True},
    ],
)
def test_tls_loopback_or_private_networks_pass(changes):
    assert findings(**changes) == []


@pytest.mark.parametrize("value", ["10s; location /x { }", "0", -1, "", True, "1.5", "10\n"])
def test_proxy_timeouts_must_be_whole_seconds(value):
    found = findings(proxy_timeouts={"connect": 10, "read": value, "send": 3600})
    assert [f["field"] for f in found] == ["api_gateway_proxy_read_timeout"]
    assert f"{value!r} is not a whole number of seconds." in found[0]["message"]
    assert "as proxy_read_timeout <n>s." in found[0]["message"]


def test_proxy_timeouts_as_strings_pass():
    assert _gateway.check_proxy_timeouts("h", {"connect": "10", "read": 3600, "send": "3600"}) == []


@pytest.mark.parametrize(
    ("rate", "burst", "fields"),
    [
        ("30r/m; allow all", 20, ["api_gateway_unauthorized_rate"]),
        ("30r/h", 20, ["api_gateway_unauthorized_rate"]),
        ("0r/s", 20, ["api_gateway_unauthorized_rate"]),
        ("30r/m\n", 20, ["api_gateway_unauthorized_rate"]),
        (30, 20, ["api_gateway_unauthorized_rate"]),
        ("30r/m", -1, ["api_gateway_unauthorized_burst"]),
        ("30r/m", "20 nodelay", ["api_gateway_unauthorized_burst"]),
        ("30r/m", True, ["api_gateway_unauthorized_burst"]),
        ("", None, ["api_gateway_unauthorized_rate", "api_gateway_unauthorized_burst"]),
    ],
)
def test_unauthorized_rate_and_burst_must_be_nginx_figures(rate, burst, fields):
    found = findings(unauthorized_rate=rate, unauthorized_burst=burst)
    assert [f["field"] for f in found] == fields
    if "api_gateway_unauthorized_rate" in fields:
        assert f"{rate!r} is not an nginx request rate." in found[0]["message"]
        assert "for example 30r/m or 2r/s." in found[0]["message"]


@pytest.mark.parametrize(("rate", "burst"), [("30r/m", 20), ("2r/s", 0), ("600r/m", 100000)])
def test_unauthorized_rates_pass(rate, burst):
    assert _gateway.check_unauthorized_limit("h", rate, burst) == []


# Shapes as the serving_plan action builds them: "a" token character, " " whitespace, "?" other.
@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        ("a" * 31, "is 31 characters long, shorter than 32"),
        ("", "is 0 characters long, shorter than 32"),
        ("a" * 40 + " ", "contains whitespace (a space, tab or newline, at the ends too)"),
        ("a" * 16 + " " + "a" * 16, "contains whitespace"),
        ("a" * 32 + "?", "contains characters other than A-Z a-z 0-9 . _ ~ + / = -"),
    ],
)
def test_weak_keys_are_refused_without_showing_them(shape, problem):
    found = findings(key_shapes={"api_gateway_keys[chat]": shape})
    assert [(f["rule"], f["field"]) for f in found] == [("weak-api-key", "api_gateway_keys[chat]")]
    message = found[0]["message"]
    assert message.startswith(f"gw-host: host-wide: field api_gateway_keys[chat]: the key in "
                              f"api_gateway_keys[chat] {problem}")  # fmt: skip
    assert "(the key is not shown)" in message
    assert "Fix: use a key of at least 32 of A-Z a-z 0-9 . _ ~ + / = - (openssl rand -hex 32)" in message


def test_every_weak_key_is_named():
    found = _gateway.check_key_shapes("h", {"api_gateway_host_key": "a" * 8, "api_gateway_keys[b]": "a" * 64,
                                            "api_gateway_keys[a]": "?" * 40})  # fmt: skip
    assert [f["field"] for f in found] == ["api_gateway_host_key", "api_gateway_keys[a]"]


@pytest.mark.parametrize("shapes", [None, {}, "aaaa", {"api_gateway_host_key": None}])
def test_no_key_shapes_no_finding(shapes):
    assert _gateway.check_key_shapes("h", shapes) == []


@pytest.mark.parametrize(
    ("listen", "scheme", "base"),
    [
        ("", "http", "http://127.0.0.1"),
        ("0.0.0.0", "http", "http://127.0.0.1"),  # noqa: S104 - a listen address under test, nothing binds
        ("127.0.0.1", "https", "https://127.0.0.1"),
        # The probes called 127.0.0.1 whatever the listen address: a gateway on one address failed its verify.
        ("10.0.0.5", "http", "http://10.0.0.5"),
        ("172.18.0.3", "https", "https://172.18.0.3"),
        ("fd00::5", "http", "http://[fd00::5]"),
        ("::", "http", "http://[::1]"),
        ("::1", "http", "http://[::1]"),
    ],
)
def test_the_probes_call_the_address_nginx_listens_on(listen, scheme, base):
    assert _gateway.probe_base(listen, scheme) == base


def test_the_role_builds_its_probe_urls_from_the_listen_address():
    from pathlib import Path

    import yaml

    role_vars = yaml.safe_load((Path(__file__).resolve().parents[4] / "roles/api_gateway/vars/main.yml").read_text())
    assert "127.0.0.1" not in role_vars["__api_gateway_probe_targets"]
    assert "gateway_probe_base" in role_vars["__api_gateway_probe_base"]


@pytest.mark.parametrize("value", ["fe80::1%eth0", "fd00::5%2"])
def test_a_listen_address_with_a_zone_index_is_refused(value):
    found = findings(listen_address=value)
    assert [f["field"] for f in found] == ["api_gateway_listen_address"]
    assert (f"field api_gateway_listen_address: {value!r} carries a zone index (%{value.partition('%')[2]}), "
            "which nginx's listen directive does not take") in found[0]["message"]
    assert "Fix: write the address without the zone" in found[0]["message"]


@pytest.mark.parametrize(
    ("where", "type_name", "said"),
    [
        ("api_gateway_keys[chat]", "dict", 'is a mapping, not a string (a key goes straight after the name: '
                                           'api_gateway_keys: {chat: "<key>"}, no nested keys)'),
        ("api_gateway_keys[chat]", "_AnsibleTaggedList", "is a list, not a string"),
        ("api_gateway_host_key", "int", "is a number, not a string: YAML read it unquoted"),
        ("api_gateway_metrics_key", "bool", "is a boolean, not a string"),
    ],
)
def test_a_key_that_is_no_string_is_refused_by_its_type(where, type_name, said):
    # A mapping was refused as "contains whitespace" (its text), a number crashed preflight.
    found = findings(key_shapes={where: "??a?? a?"}, key_types={where: type_name})
    assert [(f["rule"], f["field"]) for f in found] == [("weak-api-key", where)]
    assert f"the key in {where} {said}" in found[0]["message"]
    assert "Fix: write it as a quoted string: a key of at least 32" in found[0]["message"]
    expected = 'api_gateway_keys: {chat: "<key>"}' if where.startswith("api_gateway_keys") else f'{where}: "<key>"'
    assert f"as {expected}" in found[0]["message"]


@pytest.mark.parametrize("type_name", ["str", "EncryptedString", "_AnsibleTaggedStr"])
def test_a_string_key_is_checked_by_its_shape(type_name):
    assert findings(key_shapes={"api_gateway_host_key": "a" * 40}, key_types={"api_gateway_host_key": type_name}) == []


def test_the_metrics_key_must_be_no_inference_key():
    found = findings(metrics_reused=["api_gateway_keys[chat]"])
    assert [(f["rule"], f["field"]) for f in found] == [("weak-api-key", "api_gateway_metrics_key")]
    assert ("api_gateway_metrics_key is the same key as api_gateway_keys[chat] (the keys are not shown)."
            in found[0]["message"])
    assert "Fix: give api_gateway_metrics_key a key of its own" in found[0]["message"]


def _read_inputs(**variables):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    from ansible_collections.volta.serving.plugins.plugin_utils._plan_inputs import expressions

    templar = Templar(loader=DataLoader(), variables=variables)
    read = expressions("arguments")
    out = {name: templar.evaluate_expression(trust_as_template(read[name]))
           for name in ("api_key_instances", "api_host_key", "api_key_sha256")}
    gateway = templar.evaluate_expression(trust_as_template(read["gateway"]))
    return {**out, **{name: gateway[name] for name in ("key_shapes", "key_types", "metrics_reused")}}


def test_the_key_inputs_read_a_null_key_map_and_a_numeric_host_key():
    # Both crashed the serving plan's read (dict2items of None, length of an int).
    read = _read_inputs(api_gateway_keys=None, api_gateway_host_key=12345)
    assert read["api_key_instances"] == []
    assert read["api_host_key"] is True
    assert read["key_shapes"] == {"api_gateway_host_key": "aaaaa"}
    assert read["key_types"] == {"api_gateway_host_key": "int"}
    assert list(read["api_key_sha256"]) == ["api_gateway_host_key"]


def test_the_key_inputs_name_the_type_of_each_key_and_the_reused_metrics_key():
    key = "k" * 40
    read = _read_inputs(api_gateway_keys={"chat": key, "m": {"value": key}, "off": None},
                        api_gateway_host_key="h" * 40, api_gateway_metrics_key=key)
    assert read["key_types"] == {"api_gateway_keys[chat]": "str", "api_gateway_keys[m]": "dict",
                                 "api_gateway_host_key": "str", "api_gateway_metrics_key": "str"}
    assert read["metrics_reused"] == ["api_gateway_keys[chat]"]
    assert set(read["api_key_sha256"]) == {"api_gateway_keys[chat]", "api_gateway_keys[m]", "api_gateway_host_key",
                                           "api_gateway_metrics_key"}
    assert _read_inputs(api_gateway_host_key=key)["metrics_reused"] == []


def test_a_key_filed_under_a_misspelt_name_is_named_with_the_closest_instance():
    from ansible_collections.volta.serving.plugins.plugin_utils._rules_security import check_security

    inst = {"name": "chat", "enabled": True, "extra_args": [], "env": {}}
    ctx = {"host": "gw-host", "generate_keys": False, "host_key": False, "keyed_instances": {"caht", "embed"}}
    (found,) = check_security(inst, ctx)
    assert found["rule"] == "no-api-key"
    assert ("Fix: api_gateway_keys has an entry 'caht', the closest to 'chat'; an entry named after no instance or "
            "service of the host is never used: if it is meant for chat, rename it to chat. Else add chat to "
            "api_gateway_keys") in found["message"]
    far = check_security(inst, {**ctx, "keyed_instances": {"embed"}})[0]["message"]
    assert "Fix: add chat to api_gateway_keys (in Ansible Vault)" in far
