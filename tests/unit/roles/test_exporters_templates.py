"""roles/exporters' templates and variables rendered with Ansible's templating: the unit's sandbox
grants only what volta-exporter reads, node_exporter's listen address, the pinned requirements."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter.service_urls import loopback_address, url_host
from ansible_collections.volta.serving.plugins.filter.systemd_quote import systemd_exec

ROLE = Path(__file__).resolve().parents[3] / "roles" / "exporters"


def trusted(values):
    return {k: trust_as_template(v) if isinstance(v, str) else v for k, v in values.items()}


def templar(**changes):
    variables = {
        **trusted(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())),
        **trusted(yaml.safe_load((ROLE / "vars" / "main.yml").read_text())),
        "ansible_managed": "managed",
        "volta_server": {"gpu_count": 2},
        **changes,
    }
    t = Templar(loader=DataLoader(), variables=variables)
    t.environment.filters["volta.serving.systemd_exec"] = systemd_exec
    t.environment.filters["volta.serving.url_host"] = url_host
    t.environment.filters["volta.serving.loopback_address"] = loopback_address
    return t


def render(name, **changes):
    return templar(**changes).template(trust_as_template((ROLE / "templates" / name).read_text()))


def directives(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_unit_on_loopback_with_kmsg():
    unit = directives(render("volta-exporter.service.j2"))
    exec_start = next(line for line in unit if line.startswith("ExecStart="))
    assert shlex.split(exec_start.removeprefix("ExecStart=")) == [
        "/opt/volta-exporter/venv/bin/python", "-I", "/opt/volta-exporter/volta_exporter.py",
        "--listen-address", "127.0.0.1", "--port", "9402", "--kernel-log", "/dev/kmsg",
        "--gateway-logs", "/var/log/nginx/volta-*.access.log", "--expected-gpus", "2"]
    for line in ["User=volta-exporter", "Group=volta-exporter", "AmbientCapabilities=CAP_SYSLOG",
                 "CapabilityBoundingSet=CAP_SYSLOG", "ProtectSystem=strict", "DevicePolicy=closed",
                 "DeviceAllow=/dev/nvidiactl rw", "DeviceAllow=/dev/nvidia1 rw", "DeviceAllow=/dev/kmsg r",
                 "IPAddressDeny=any", "IPAddressAllow=localhost", "NoNewPrivileges=true"]:
        assert line in unit, line
    # No group: the gateway's logs are granted by ACL (adm would read auth.log too).
    unwanted = ("ProtectKernelLogs", "ReadWritePaths", "DeviceAllow=/dev/nvidia2", "SupplementaryGroups")
    assert not any(line.startswith(unwanted) for line in unit)


def test_unit_with_a_file_kernel_log_and_a_network_address_has_no_capability_and_no_ip_filter():
    unit = directives(render("volta-exporter.service.j2", exporters_kernel_log="/var/log/lab-kern.log",
                             exporters_listen_address="10.0.0.11", volta_server={}))
    assert "CapabilityBoundingSet=" in unit
    assert not any(line.startswith(("AmbientCapabilities", "IPAddress", "DeviceAllow=/dev/kmsg")) for line in unit)
    assert "--expected-gpus" not in next(line for line in unit if line.startswith("ExecStart="))


@pytest.mark.parametrize(("address", "listen", "verify"), [
    ("127.0.0.1", "127.0.0.1:9100", "127.0.0.1"),
    ("0.0.0.0", "0.0.0.0:9100", "127.0.0.1"),  # noqa: S104  the setting under test, not a bind
    ("::", "[::]:9100", "[::1]"),
    ("10.0.0.11", "10.0.0.11:9100", "10.0.0.11"),
])
def test_node_exporter_listen_address_and_the_verify_host(address, listen, verify):
    text = render("prometheus-node-exporter.j2", exporters_listen_address=address)
    assert f'ARGS="--web.listen-address={listen}"' in text.splitlines()
    assert templar(exporters_listen_address=address).template(trust_as_template("{{ __exporters_verify_host }}")) \
        == verify


def test_requirements_pin_both_packages_by_version_and_sha256():
    lines = directives(render("requirements.txt.j2"))
    assert lines == [
        "nvidia-ml-py==13.615.71 --hash=sha256:959bf4adf6fe1308e4bd739e722236b0d1ec8392e2cefad33ff70c311380b9b6",
        "prometheus-client==0.26.0 --hash=sha256:fa93d06737aa02bacd05794768508bb97d2fbee28cb3bca04eaae92f0ca953d6",
    ]


# A listen address with a space in it: systemd splits $ARGS of /etc/default/prometheus-node-exporter at
# whitespace, so the rest becomes a flag of node_exporter's own (here: serve every file of /etc to its
# textfile collector). The template writes what it is given; the settings play refuses the value before any
# change (settings_checks/exporters.yml: address; tests/unit/roles/test_bad_input_monitor.py runs it).
INJECTED = "127.0.0.1 --collector.textfile.directory=/etc --web.listen-address=0.0.0.0"


def test_a_space_in_the_listen_address_adds_a_flag_to_node_exporters_command_line():
    text = render("prometheus-node-exporter.j2", exporters_listen_address=INJECTED)
    args = next(line for line in text.splitlines() if line.startswith("ARGS="))
    flags = shlex.split(shlex.split(args.removeprefix("ARGS="))[0])
    assert flags == ["--web.listen-address=127.0.0.1", "--collector.textfile.directory=/etc",
                     "--web.listen-address=0.0.0.0:9100"]


def test_the_settings_registry_refuses_that_listen_address():
    from ansible_collections.volta.serving.plugins.plugin_utils._settings import check_variable

    problems = check_variable("gpu1", "exporters_listen_address", INJECTED)
    assert problems, problems
    assert problems[0].startswith('gpu1: exporters_listen_address: "127.0.0.1 --collector')
    assert "Fix: set exporters_listen_address to an address such as 10.0.0.5" in problems[0]
