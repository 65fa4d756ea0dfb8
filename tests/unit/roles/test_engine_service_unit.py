# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/engine_service/templates/engine.service.j2 rendered with Ansible's templating, read as systemd would.

Issue 52, hole 5: engine_service_read_write_paths and engine_service_ip_address_allow were joined raw into
every unit, so a newline in either added a line of the operator's choosing to [Service]; with
``ExecStartPre=+...`` that line runs as root before the engine (``+``: full privileges). The unit now builds
those lines through volta.serving.systemd_paths and volta.serving.systemd_ip_allow, and the account's names
through volta.serving.systemd_account, which refuse what systemd would read as another line, another word or
a privilege (the settings play refuses the same values earlier, with host, variable, why and fix).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter.systemd_quote import FilterModule

ROLE = Path(__file__).resolve().parents[3] / "roles" / "engine_service"
INJECTED = "/srv/data\nExecStartPre=+/bin/sh -c 'id > /root/owned'"
# One instance of the serving plan (module_utils/_render's entry), as the template reads it.
INSTANCE = {"name": "chat", "engine": "vllm", "served_model_name": "chat", "bind_host": "127.0.0.1",
            "backend_port": 18001, "env": {"CUDA_VISIBLE_DEVICES": "0"}, "api_key_env": "VLLM_API_KEY",
            "environment_file": "/etc/volta/secrets/chat.env",
            "argv": ["/opt/volta/engines/vllm/current/venv/bin/vllm", "serve", "/srv/models/chat"]}
SANDBOX = {"device_allow": ["char-nvidia-frontend rw"], "address_families": ["AF_UNIX", "AF_INET"]}


def render(**changes):
    variables = {
        **yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()),
        "ansible_managed": "managed",
        "role_name": "engine_service",
        "__engine_service_instance": INSTANCE,
        "__engine_service_serving_plan": {"plan": {"unit_sandbox": SANDBOX}},
        **changes,
    }
    templar = Templar(loader=DataLoader(), variables=variables)
    for name, plugin in FilterModule().filters().items():
        templar.environment.filters[f"volta.serving.{name}"] = plugin
    return templar.template(trust_as_template((ROLE / "templates" / "engine.service.j2").read_text()))


def directives(unit):
    """The unit's directive lines (no comments), as systemd reads them one per line."""
    return [line for line in unit.splitlines() if "=" in line and not line.startswith("#")]


def test_the_default_unit_has_one_exec_start_and_the_sandbox_lines():
    lines = directives(render())
    assert [line for line in lines if line.startswith("Exec")] == [
        "ExecStart=/opt/volta/engines/vllm/current/venv/bin/vllm serve /srv/models/chat"]
    assert "ReadWritePaths=/var/lib/volta /var/cache/volta/chat" in lines
    assert "IPAddressAllow=localhost" in lines
    assert "User=volta" in lines and "Group=volta" in lines and "SupplementaryGroups=video render" in lines


def test_extra_paths_and_networks_are_written_as_words():
    lines = directives(render(engine_service_read_write_paths=["/srv/data", "/data/hf-cache"],
                              engine_service_ip_address_allow=["localhost", "10.1.0.0/16", "2001:db8::/48"]))
    assert "ReadWritePaths=/var/lib/volta /var/cache/volta/chat /srv/data /data/hf-cache" in lines
    assert "IPAddressAllow=localhost 10.1.0.0/16 2001:db8::/48" in lines


@pytest.mark.parametrize(("variable", "value"), [
    ("engine_service_read_write_paths", [INJECTED]),
    ("engine_service_ip_address_allow", ["localhost\nExecStartPre=+/bin/sh -c 'id > /root/owned'"]),
    ("engine_service_user", "volta\nExecStartPre=+/bin/sh -c 'id > /root/owned'"),
    ("engine_service_group", "volta\nExecStartPre=+/bin/sh"),
    ("engine_service_device_groups", ["video\nExecStartPre=+/bin/sh"]),
    ("engine_service_home", "/var/lib/volta\nExecStartPre=+/bin/sh"),
    ("engine_service_cache_root", "/var/cache/volta\nExecStartPre=+/bin/sh"),
])
def test_a_newline_never_reaches_the_unit(variable, value):
    # Before: the unit held a second Exec line, run as root (+) before the engine:
    #   ReadWritePaths=/var/lib/volta /var/cache/volta/chat /srv/data
    #   ExecStartPre=+/bin/sh -c 'id > /root/owned'
    with pytest.raises(AnsibleError, match="control character"):
        render(**{variable: value})


@pytest.mark.parametrize(("variable", "value", "text"), [
    ("engine_service_read_write_paths", ["/"], 'ReadWritePaths: "/" is the root of the file system'),
    ("engine_service_read_write_paths", ["/etc/systemd"], 'ReadWritePaths: "/etc/systemd" is inside /etc'),
    ("engine_service_read_write_paths", ["srv/data"], 'ReadWritePaths: "srv/data" is not an absolute path'),
    ("engine_service_read_write_paths", ["/data/hf cache"], "ReadWritePaths: \"/data/hf cache\" contains ' '"),
    ("engine_service_read_write_paths", ["/data/%h"], "ReadWritePaths: \"/data/%h\" contains '%'"),
    ("engine_service_home", "/usr/local", 'WorkingDirectory: "/usr/local" is inside /usr'),
    ("engine_service_cache_root", "/etc/volta", 'ReadWritePaths: "/etc/volta/chat" is inside /etc'),
    ("engine_service_ip_address_allow", ["any"], 'IPAddressAllow: "any" allows every address'),
    ("engine_service_ip_address_allow", ["0.0.0.0/0"], 'IPAddressAllow: "0.0.0.0/0" allows every IPv4 address'),
    ("engine_service_ip_address_allow", ["::/0"], 'IPAddressAllow: "::/0" allows every IPv6 address'),
    ("engine_service_ip_address_allow", ["10.0.0.0/8 any"], 'IPAddressAllow: "10.0.0.0/8 any" is not an address'),
    ("engine_service_user", "root", 'User: "root" is the superuser'),
    ("engine_service_user", "0", 'User: "0" is the superuser (id 0)'),
    ("engine_service_user", 0, "User: 0 is the superuser (id 0)"),
    ("engine_service_group", "root", 'Group: "root" is the superuser\'s group'),
    ("engine_service_device_groups", ["video", "disk"], 'SupplementaryGroups: "disk" gives the engines more than'),
])
def test_the_unit_refuses_root_and_every_address(variable, value, text):
    with pytest.raises(AnsibleError) as refused:
        render(**{variable: value})
    assert text in str(refused.value)
