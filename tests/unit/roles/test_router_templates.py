# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/router/templates rendered with Ansible's templating and read by the real nginx (nginx -t).

Issue 52, holes 1 and 2: every router_* value and the inventory names went into router.conf.j2 unchecked. Each
injected value below renders a configuration that the real `nginx -t` accepts (the hole: a location that
serves the router's keys file, or a path without the key); the router's settings check now refuses each,
before any change, with host, variable, why and fix. nginx runs in test mode only (it binds nothing), with
every path of the configuration under tmp_path.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.module_utils._services import rotation_files, rotation_path
from ansible_collections.volta.serving.plugins.plugin_utils._router import router_plan
from ansible_collections.volta.serving.plugins.plugin_utils._router_settings import check_settings

ROLE = Path(__file__).resolve().parents[3] / "roles" / "router"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
KEY = "router-template-test-key-0123456789abcdef"
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "served_model_name": "lab-chat",
        "gpus": [0], "port": 8001, "service_port": 8000}
OPEN = "location /volta-open/ { proxy_pass http://volta_router_8000; }"
KEYS_ALIAS = "location /volta-keys/ { alias /etc/nginx/volta-router/; }"

pytestmark = pytest.mark.skipif(not Path(NGINX).exists(), reason="nginx is not installed on this machine")


def view(host, address):
    return {"host": host, "address": address, "instances": [CHAT], "keys": {"lab-chat": KEY}, "host_key": "",
            "generate_keys": False, "tls": False}


def render(tmp_path, services, **settings):
    """router.conf.j2 and keys.conf.j2 as the role renders them, every path moved under tmp_path."""
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    role_vars = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
    variables = {
        **defaults,
        "ansible_managed": "managed",
        "__router_keys_conf": str(tmp_path / "keys.conf"),
        "__router_listen_prefix": trust_as_template(role_vars["__router_listen_prefix"]),
        "__router_auth_scheme_re": role_vars["__router_auth_scheme_re"],
        "__router_services": services,
        **settings,
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    for name in ("router.conf", "keys.conf"):
        text = templar.template(trust_as_template((ROLE / "templates" / f"{name}.j2").read_text()))
        (tmp_path / name).write_text(text.replace("/var/log/nginx/", f"{tmp_path}/"))
    for entry in rotation_files(services):
        Path(entry["path"]).write_text(entry["content"])
    return (tmp_path / "router.conf").read_text()


def nginx_t(tmp_path):
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n    access_log off;\n    include {tmp_path}/router.conf;\n}}\n")
    proc = subprocess.run([NGINX, "-t", "-q", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                          capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, proc.stderr


def services(tmp_path, hosts=(("gpu-a", "127.0.0.1"),)):
    plan = router_plan([view(h, a) for h, a in hosts], "router", rotation_dir=str(tmp_path))
    assert plan["findings"] == []
    return plan["services"]


def test_the_defaults_pass_nginx_t(tmp_path):
    conf = render(tmp_path, services(tmp_path), router_listen_address="127.0.0.1")
    assert "listen 127.0.0.1:8000;" in conf
    assert nginx_t(tmp_path) == (0, "")


INJECTED = {
    "router_listen_address": (f"127.0.0.1; {KEYS_ALIAS} listen 127.0.0.1", KEYS_ALIAS,
                              "router_listen_address: '127.0.0.1; location /volta-keys/ { alias "
                              "/etc/nginx/volta-router/; } listen 127.0.0.1' is not an IPv4 or IPv6 address, so nginx "
                              "would read it as configuration"),
    "router_client_max_body_size": (f"64m; {OPEN} #", OPEN,
                                    "router_client_max_body_size: '64m; location /volta-open/ { proxy_pass "
                                    "http://volta_router_8000; } #' is not an nginx size"),
    "router_unauthorized_rate": (f"30r/m; server {{ listen 127.0.0.1:8099; {KEYS_ALIAS} }} #", KEYS_ALIAS,
                                 "router_unauthorized_rate: '30r/m; server { listen 127.0.0.1:8099; location "
                                 "/volta-keys/ { alias /etc/nginx/volta-router/; } } #' is not an nginx request rate"),
    "router_unauthorized_burst": (f"20 nodelay; }} {OPEN} location @volta_x {{ limit_req "
                                  "zone=volta_router_unauthorized",
                                  OPEN, "router_unauthorized_burst: '20 nodelay; } location /volta-open/ { proxy_pass "
                                  "http://volta_router_8000; } location @volta_x { limit_req "
                                  "zone=volta_router_unauthorized' is not a whole number from 0 to 100000"),
    "router_proxy_connect_timeout": (f"5s; {OPEN} #", OPEN,
                                     "router_proxy_connect_timeout: '5s; location /volta-open/ { proxy_pass "
                                     "http://volta_router_8000; } #' is not a whole number of seconds"),
    "router_proxy_read_timeout": (f"3600s; {OPEN} #", OPEN, "router_proxy_read_timeout: '3600s; location"),
    "router_proxy_send_timeout": (f"3600s; {OPEN} #", OPEN, "router_proxy_send_timeout: '3600s; location"),
    "router_keepalive": (f"16; }} server {{ listen 127.0.0.1:8098; {KEYS_ALIAS} }} upstream volta_x {{ "
                         "server 127.0.0.1:1; keepalive 1", KEYS_ALIAS,
                         "router_keepalive: '16; } server { listen 127.0.0.1:8098; location /volta-keys/"),
}


@pytest.mark.parametrize("variable", sorted(INJECTED))
def test_an_injected_setting_passes_nginx_t_and_is_refused_before_any_change(tmp_path, variable):
    value, directive, message = INJECTED[variable]
    conf = render(tmp_path, services(tmp_path), **{variable: value})
    # The hole: nginx reads the value as configuration, and accepts it.
    assert directive in conf
    assert nginx_t(tmp_path) == (0, "")
    # Now: the router's settings check refuses it, naming host, variable, why and fix.
    (refusal,) = check_settings("router01", {variable: value})
    assert refusal.startswith(f"router01: {message}"), refusal
    assert ". Fix: " in refusal


def test_a_host_name_reaches_the_include_lines_only_as_a_safe_id(tmp_path):
    """Hole 2: the raw inventory name in an include line adds a server nginx accepts; the plan now refuses the
    name and names the rotation file by a safe id."""
    evil = "x;server 127.0.0.2:9 backup;#"
    # Before: the rotation file named by the raw inventory name.
    old = services(tmp_path)
    old[0]["backends"].append({"host": evil, "id": evil, "address": "127.0.0.1", "port": 8000,
                               "rotation_file": rotation_path(8000, evil, str(tmp_path))})
    (tmp_path / "8000-x").write_text("")  # what the include line now reads up to its first ";"
    conf = render(tmp_path, old)
    assert "server 127.0.0.2:9 backup;" in conf
    assert nginx_t(tmp_path) == (0, "")
    # Now: refused in the router's plan, and the include line names a file of the rotation directory.
    plan = router_plan([view("gpu-a", "127.0.0.1"), view(evil, "127.0.0.1")], "router", rotation_dir=str(tmp_path))
    assert plan["findings"][0].startswith(f"{evil}: field inventory_hostname: the inventory name {evil!r} holds")
    conf = render(tmp_path, plan["services"])
    assert "127.0.0.2" not in conf
    assert nginx_t(tmp_path) == (0, "")


@pytest.mark.parametrize("value", [-1, 0])
def test_a_keepalive_below_one_is_refused_before_nginx_refuses_it(tmp_path, value):
    render(tmp_path, services(tmp_path), router_keepalive=value)
    assert nginx_t(tmp_path)[0] != 0
    (refusal,) = check_settings("router01", {"router_keepalive": value})
    assert refusal == (f"router01: router_keepalive: {value} is not a whole number from 1 to 10000 (nginx's keepalive "
                       "of each upstream; nginx refuses the configuration otherwise). Fix: write a whole number of "
                       "idle connections, for example 16.")
