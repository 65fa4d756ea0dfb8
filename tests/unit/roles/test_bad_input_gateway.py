# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on the controller (volta_preflight_detect=false): the gateway's and Prometheus's mistakes.

Issue 52: a null api_gateway_keys and an unquoted numeric api_gateway_host_key crashed the serving plan; a key
written as a mapping was refused as "contains whitespace", one written as a list unclearly; a key filed under a
misspelt instance name left that entry unnamed; fe80::1%eth0 as the listen address passed until nginx -t, after
other hosts changed; firewall_metrics_cidrs: [0.0.0.0/0] opened the gateway over plain HTTP without a word.
Each host makes one mistake, one host none; each refusal is asserted by its message (host, variable, why and
fix), nothing crashes and no key is shown. Three runs, because the first refusing play stops every host:
- SETTINGS: the serving hosts' settings, refused by the settings action preflight runs first;
- PLAN: settings of the right shape that the serving plan refuses (preflight's rules);
- MONITORING: a good serving host and monitoring hosts, refused by the settings play.
No run reaches a host or the network.
"""

from __future__ import annotations

import pytest
from bad_input import assert_no_crash, flat, refused, run
from test_preflight_controller import KEY, host

SECRET = "gateway-bad-input-secret-0123456789abcdef"  # noqa: S105 - a test value, never a real key
GOOD_METRICS_KEY = "metrics-only-key-not-a-secret-0123456789"


def settings_hosts():
    return {
        "good": host(api_gateway_metrics_key=GOOD_METRICS_KEY, api_gateway_listen_address="10.0.0.5"),
        "nullkeys": host(api_gateway_keys=None, api_gateway_host_key=KEY),
        "numkey": host(api_gateway_keys={}, api_gateway_host_key=12345678901234567890123456789012345),
        "mapkey": host(api_gateway_keys={"chat": {"value": SECRET}}),
        "listkey": host(api_gateway_keys={"chat": [SECRET]}),
        "spacekey": host(api_gateway_keys={"chat": f" {SECRET}"}),
        "zone": host(api_gateway_listen_address="fe80::1%eth0"),
        "listenname": host(api_gateway_listen_address="0.0.0.0; location /x {"),
        "shortmetrics": host(api_gateway_metrics_key="tooShortKey7"),
        "notpem": host(api_gateway_tls_certificate="not a certificate", api_gateway_tls_private_key=SECRET),
    }


SETTINGS = {
    "nullkeys": "nullkeys: api_gateway_keys: is empty (null: nothing is written after the colon). Fix: write "
                "api_gateway_keys as a mapping, or {} for none.",
    "numkey": "numkey: api_gateway_host_key: the key (not shown) is a number, not a string: YAML read it unquoted "
              "and may have changed it (leading zeros, exponents, underscores). Fix: write it as a quoted string: a "
              'key of at least 32 of A-Z a-z 0-9 . _ ~ + / = - (openssl rand -hex 32), in Ansible Vault, as '
              'api_gateway_host_key: "<key>", or remove it and set api_gateway_generate_keys: true.',
    "mapkey": "mapkey: api_gateway_keys: entry chat: the key (not shown) is a mapping, not a string (a key goes "
              'straight after the name: api_gateway_keys: {chat: "<key>"}, no nested keys). Fix: write it as a '
              "quoted string",
    "listkey": "listkey: api_gateway_keys: entry chat: the key (not shown) is a list, not a string (one key per "
               "instance or host: a string, not a list of keys). Fix: write it as a quoted string",
    "spacekey": "spacekey: api_gateway_keys: entry chat: the key (not shown) contains whitespace (a space, tab or "
                "newline, at the ends too). Fix: use a key of at least 32",
    "zone": "zone: api_gateway_listen_address: 'fe80::1%eth0' carries a zone index (%eth0), which nginx's listen "
            "directive does not take (nginx -t refuses it, after other hosts changed); it is pasted into the nginx "
            "listen directive of every public port. Fix: set api_gateway_listen_address to the address without "
            "the zone",
    "listenname": "listenname: api_gateway_listen_address: '0.0.0.0; location /x {' is not an IP address; it is "
                  "pasted into the nginx listen directive of every public port. Fix: set api_gateway_listen_address "
                  'to one IPv4 or IPv6 address (no port, no brackets), or "" for every address.',
    "shortmetrics": "shortmetrics: api_gateway_metrics_key: the key (not shown) is 12 characters long, shorter than "
                    '32. Fix: use a key of at least 32 of A-Z a-z 0-9 . _ ~ + / = - (openssl rand -hex 32), in '
                    'Ansible Vault, as api_gateway_metrics_key: "<key>".',
    "notpem": 'notpem: api_gateway_tls_certificate: is not PEM text of a certificate (chain) \'not a certificate\'... '
              "(only BEGIN/END lines around base64 lines)",
    "notpem-key": "notpem: api_gateway_tls_private_key: is not PEM text of a private key (only BEGIN/END lines",
}


def plan_hosts():
    return {
        "good": host(api_gateway_metrics_key=GOOD_METRICS_KEY),
        "misspelt": host(api_gateway_keys={"caht": KEY}),
        "metricsopen": host(firewall_metrics_cidrs=["0.0.0.0/0"]),
        "routeropen": host(firewall_router_cidrs=["203.0.113.9"]),
        "reused": host(api_gateway_metrics_key=KEY),
    }


PLAN = {
    "misspelt": "misspelt: instance chat: field api_gateway_keys: no API key is configured for this instance. Why: "
                "without a key anyone who reaches the public port can use the model. Fix: api_gateway_keys has an "
                "entry 'caht', the closest to 'chat'; an entry named after no instance or service of the host is "
                "never used: if it is meant for chat, rename it to chat. Else add chat to api_gateway_keys",
    "metricsopen": "metricsopen: host-wide: field api_gateway_tls_certificate: the public ports are open to "
                   "0.0.0.0/0 over plain HTTP (through firewall_metrics_cidrs). Why: the API keys and every prompt "
                   "would cross networks outside private ranges unencrypted. Fix: set api_gateway_tls_certificate "
                   "and api_gateway_tls_private_key, narrow firewall_metrics_cidrs to private networks, or set "
                   "api_gateway_allow_plain_http: true",
    "routeropen": "routeropen: host-wide: field api_gateway_tls_certificate: the public ports are open to "
                  "203.0.113.9 over plain HTTP (through firewall_router_cidrs).",
    "reused": "reused: host-wide: field api_gateway_metrics_key: api_gateway_metrics_key is the same key as "
              "api_gateway_keys[chat] (the keys are not shown). Why: Prometheus sends the metrics key on every "
              "scrape, over plain HTTP unless the gateway has TLS; as an inference key it would open the models to "
              "whoever reads it. Fix: give api_gateway_metrics_key a key of its own",
}


def monitoring_inventory():
    monitor = {"ansible_connection": "local"}
    return {"all": {"children": {
        "volta": {"hosts": {"good": host(api_gateway_metrics_key=GOOD_METRICS_KEY)}},
        "monitoring": {"hosts": {
            "mon-good": {**monitor, "prometheus_scrape_interval": "15s", "prometheus_alertmanagers": ["am1:9093"]},
            "mon-flag": {**monitor, "prometheus_web_listen_address": "127.0.0.1:9090 --web.enable-admin-api"},
            "mon-interval": {**monitor, "prometheus_scrape_interval": "5s\nscrape_configs: []"},
            "mon-am": {**monitor, "prometheus_alertmanagers": "am1:9093"},
            "mon-ca": {**monitor, "prometheus_gateway_ca_certificate": "-----BEGIN CERTIFICATE-----\n{x}\n"},
        }},
    }}}  # fmt: skip


MONITORING = {
    "mon-flag": "mon-flag: prometheus_web_listen_address: \"127.0.0.1:9090 --web.enable-admin-api\" is not host:port: "
                "it contains ' ', which would be read as syntax (YAML of prometheus.yml, or a flag of the daemon's "
                "command line). Fix: set prometheus_web_listen_address to host:port such as 127.0.0.1:9090",
    "mon-interval": 'mon-interval: prometheus_scrape_interval: "5s\\nscrape_configs: []" is not a Prometheus duration',
    "mon-am": 'mon-am: prometheus_alertmanagers: "am1:9093" is one text, not a list. Fix: write '
              "prometheus_alertmanagers as a YAML list",
    "mon-ca": "mon-ca: prometheus_gateway_ca_certificate: is not PEM text of a certificate (chain)",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return run(tmp_path_factory, "settings", {"all": {"children": {"volta": {"hosts": settings_hosts()}}}})


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return run(tmp_path_factory, "plan", {"all": {"children": {"volta": {"hosts": plan_hosts()}}}})


@pytest.fixture(scope="module")
def monitoring(tmp_path_factory):
    return run(tmp_path_factory, "monitoring", monitoring_inventory())


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_gateway_setting_mistake_is_named_before_any_change(settings, name):
    rc, out = settings
    assert rc != 0
    assert SETTINGS[name] in flat(out), (name, out[-6000:])


def test_the_settings_run_neither_crashes_nor_shows_a_key(settings):
    rc, out = settings
    assert rc != 0
    assert_no_crash(out, ("dict2items", "object of type 'int' has no len"))
    assert SECRET not in out and KEY not in out and GOOD_METRICS_KEY not in out
    assert not refused(out, "good") and refused(out, "zone")


@pytest.mark.parametrize("name", sorted(PLAN))
def test_each_gateway_plan_mistake_is_named_by_preflight(plan, name):
    rc, out = plan
    assert rc != 0
    assert PLAN[name] in flat(out), (name, out[-6000:])


def test_the_plan_run_stops_before_any_change_and_shows_no_key(plan):
    rc, out = plan
    assert rc != 0
    assert_no_crash(out, ("dict2items", "object of type 'int' has no len"))
    assert KEY not in out and GOOD_METRICS_KEY not in out
    assert not refused(out, "good")


@pytest.mark.parametrize("name", sorted(MONITORING))
def test_each_prometheus_setting_mistake_is_named_by_the_settings_play(monitoring, name):
    rc, out = monitoring
    assert rc != 0
    assert MONITORING[name] in flat(out), (name, out[-6000:])


def test_the_good_monitoring_host_and_serving_host_pass(monitoring):
    rc, out = monitoring
    assert rc != 0
    assert_no_crash(out, ("dict2items", "object of type 'int' has no len"))
    assert "4 host(s) have incomplete settings, nothing was changed on any host" in flat(out)
    assert not refused(out, "good") and not refused(out, "mon-good")
    assert "PLAY [Monitoring]" not in out
