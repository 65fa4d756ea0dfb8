# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on the controller (volta_preflight_detect=false): the firewall's, the exporters' and the
monitoring host's mistakes, and the monitoring inventory of docs/monitoring.md.

Issue 52: exporters_listen_address and prometheus_retention_time could add flags to their daemons' command
lines (a space, a leading -); firewall_ssh_port: ssh was refused as "argument 'ssh_port' is of type str"; the
monitoring-host inventory of docs/monitoring.md made preflight, and so site.yml, fail (its monitoring host was
preflighted as a serving host without volta_server). Each host makes one mistake, one host none; each refusal
is asserted by its message (host, variable, why and fix), and nothing crashes. Three runs, because the first
refusing play stops every host:
- SETTINGS: serving hosts, refused by the settings action that preflight runs first;
- MONITORING: a good serving host and monitoring hosts, refused by the settings play;
- the inventory of docs/monitoring.md as shipped (inventories/example-monitoring), which passes.
No run reaches a host or the network.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from bad_input import assert_no_crash, flat, refused, run
from test_preflight_controller import host, run_site

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "inventories" / "example-monitoring"


def settings_hosts():
    return {
        "good": host(exporters_listen_address="0.0.0.0", firewall_metrics_cidrs=["10.0.0.2/32"],  # noqa: S104
                     firewall_ssh_port=2222, exporters_expected_gpus=8, firewall_exporter_tcp_ports=[9100, 9402]),
        # firewall
        "sshname": host(firewall_ssh_port="ssh"),
        "sshrange": host(firewall_ssh_port=70000),
        "hostbits": host(firewall_api_cidrs=["10.0.0.5/24"]),
        "cidrtext": host(firewall_ssh_cidrs="10.0.0.0/8"),
        "cidrrule": host(firewall_metrics_cidrs=["10.0.0.0/8 accept"]),
        "backend": host(firewall_backend="iptables"),
        "forward": host(firewall_forward_policy="reject"),
        "extraport": host(firewall_extra_tcp_ports=[8443, 70000]),
        "extrabare": host(firewall_extra_tcp_ports=8443),
        "exporterports": host(firewall_exporter_tcp_ports=["9100; accept"]),
        "testhost": host(firewall_test_connect_host="gpu1; reboot"),
        # exporters
        "listenflag": host(exporters_listen_address="127.0.0.1 --collector.textfile.directory=/etc"),
        "listendash": host(exporters_listen_address="--web.disable-exporter-metrics"),
        "listenport": host(exporters_listen_address="10.0.0.5:9100"),
        "exportport": host(exporters_port=70000),
        "exportuser": host(exporters_user="root"),
        "exportroot": host(exporters_root="/"),
        "gatewaylogs": host(exporters_gateway_logs="/var/log/*.log"),
        "kernellog": host(exporters_kernel_log="dev/kmsg"),
        "gpus": host(exporters_expected_gpus="8\nDeviceAllow=/dev/sda rw"),
        "index": host(exporters_pypi_index_url="https://pypi.org/simple --trusted-host evil.example"),
        "sha": host(exporters_nvidia_ml_py_sha256="abc"),
        "version": host(exporters_prometheus_client_version="0.26.0 --index-url=http://evil.example"),
    }


SETTINGS = {
    "sshname": 'sshname: firewall_ssh_port: "ssh" is not a whole number: the firewall\'s first rule lets SSH in on '
               "this port, so no rule would match sshd. Fix: set firewall_ssh_port to the port sshd listens on, a "
               "whole number from 1 to 65535, e.g. 22.",
    "sshrange": "sshrange: firewall_ssh_port: 70000 is not a TCP port (1-65535): the firewall's first rule lets SSH "
                "in on this port",
    "hostbits": 'hostbits: firewall_api_cidrs: entry 1 of the list: "10.0.0.5/24" has host bits set: it would be '
                "widened to 10.0.0.0/24 (256 addresses), which may not be what is meant. Fix: write 10.0.0.0/24",
    "cidrtext": 'cidrtext: firewall_ssh_cidrs: "10.0.0.0/8" is one text, not a list. Fix: write firewall_ssh_cidrs '
                'as a YAML list (required), e.g. ["10.0.0.0/8"].',
    "cidrrule": 'cidrrule: firewall_metrics_cidrs: entry 1 of the list: "10.0.0.0/8 accept" is not a network: it '
                "contains ' '",
    "backend": 'backend: firewall_backend: "iptables" is not one of nftables, ufw. Fix: set firewall_backend to',
    "forward": 'forward: firewall_forward_policy: "reject" is not one of drop, accept. Fix: set '
               "firewall_forward_policy to",
    "extraport": "extraport: firewall_extra_tcp_ports: entry 2 of the list: 70000 is not a TCP port (1-65535)",
    "extrabare": "extrabare: firewall_extra_tcp_ports: 8443 is a single value, not a list. Fix: write "
                 "firewall_extra_tcp_ports as a YAML list",
    "exporterports": 'exporterports: firewall_exporter_tcp_ports: entry 1 of the list: "9100; accept" is not a '
                     "whole number",
    "testhost": 'testhost: firewall_test_connect_host: "gpu1; reboot" is not an IPv4 or IPv6 address or a host name',
    "listenflag": 'listenflag: exporters_listen_address: "127.0.0.1 --collector.textfile.directory=/etc" is not an '
                  "IPv4 or IPv6 address or a host name: it contains ' '",
    "listendash": 'listendash: exporters_listen_address: "--web.disable-exporter-metrics" is not an IPv4 or IPv6 '
                  "address or a host name",
    "listenport": 'listenport: exporters_listen_address: "10.0.0.5:9100" is not an IPv4 or IPv6 address or a host '
                  "name (a port, brackets or a network do not belong here). Fix: set exporters_listen_address to an "
                  "address such as 10.0.0.5",
    "exportport": "exportport: exporters_port: 70000 is not a TCP port (1-65535)",
    "exportuser": 'exportuser: exporters_user: "root" is an account of the system or of another service: the role '
                  "would change its group, home and shell (nologin) and grant it the gateway's logs. Fix: set "
                  "exporters_user to an account of its own, such as volta-exporter.",
    "exportroot": 'exportroot: exporters_root: "/" is a system directory',
    "gatewaylogs": 'gatewaylogs: exporters_gateway_logs: "/var/log/*.log" is in /var/log: the exporter\'s account '
                   "would be granted every file made there (a default ACL), auth.log included. Fix: set "
                   "exporters_gateway_logs to a glob of the gateway's access logs, such as "
                   "/var/log/nginx/volta-*.access.log",
    "kernellog": 'kernellog: exporters_kernel_log: "dev/kmsg" is not an absolute path',
    "gpus": 'gpus: exporters_expected_gpus: "8\\nDeviceAllow=/dev/sda rw" is not a count of GPUs (0 to 64) or empty',
    "index": 'index: exporters_pypi_index_url: "https://pypi.org/simple --trusted-host evil.example" is not a URL',
    "sha": 'sha: exporters_nvidia_ml_py_sha256: "abc" is not a sha256 (64 hex digits)',
    "version": 'version: exporters_prometheus_client_version: "0.26.0 --index-url=http://evil.example" is not a '
               "version",
}


def monitoring_inventory():
    monitor = {"ansible_connection": "local"}
    return {"all": {"children": {
        "volta": {"hosts": {"good": host(api_gateway_metrics_key="metrics-only-key-not-a-secret-0123456789")}},
        "monitoring": {"hosts": {
            "mon-good": {**monitor, "prometheus_retention_time": "90d", "prometheus_retention_size": "50GB"},
            "mon-retention": {**monitor, "prometheus_retention_time": "30d --web.enable-admin-api"},
            "mon-retention-dash": {**monitor, "prometheus_retention_time": "--web.enable-lifecycle"},
            "mon-retention-unit": {**monitor, "prometheus_retention_time": "30"},
            "mon-retention-size": {**monitor, "prometheus_retention_size": "50 GB"},
        }},
    }}}  # fmt: skip


MONITORING = {
    "mon-retention": 'mon-retention: prometheus_retention_time: "30d --web.enable-admin-api" is not a Prometheus '
                     "duration: it contains ' ', so the daemon would read the rest of it as flags of its own command "
                     "line. Fix: set prometheus_retention_time to a duration such as 30d, 12w or 1y",
    "mon-retention-dash": 'mon-retention-dash: prometheus_retention_time: "--web.enable-lifecycle" is not a '
                          "Prometheus duration: it starts with -, so the daemon would read the rest of it as flags",
    "mon-retention-unit": 'mon-retention-unit: prometheus_retention_time: "30" is not a Prometheus duration (a '
                          "number and a unit, such as 30d)",
    "mon-retention-size": 'mon-retention-size: prometheus_retention_size: "50 GB" is not',
}


# playbooks/exporters.yml and playbooks/monitoring.yml run without the settings play of site.yml: the exporters
# role and the monitoring play check every setting the host sets first, the exporters role once the facts are read
# (the settings play leaves a setting that templates from facts to the role that reads it). Only the checks run
# (--check, and tags that match only the tasks tagged always), on the controller.
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": str(REPO / ".venv" / "bin" / "python")}
ALONE = {
    "exporters.yml": {"volta": {"hosts": {
        "fromfacts": {**LOCAL,
                      "exporters_listen_address": "{{ ansible_facts['hostname'] }} --collector.textfile.directory=/"},
        "port": {**LOCAL, "exporters_node_exporter_port": "9100 --web.disable-exporter-metrics"},
    }}},
    "monitoring.yml": {"monitoring": {"hosts": {
        "mon-alone": {**LOCAL, "prometheus_retention_time": "30d --web.enable-admin-api"},
    }}},
}
ALONE_EXPECTED = {
    "fromfacts": "fromfacts: exporters_listen_address: \"",
    "fromfacts-why": "--collector.textfile.directory=/\" is not an IPv4 or IPv6 address or a host name: it "
                     "contains ' '",
    "port": 'port: exporters_node_exporter_port: "9100 --web.disable-exporter-metrics" is not a whole number',
    "mon-alone": 'mon-alone: prometheus_retention_time: "30d --web.enable-admin-api" is not a Prometheus duration',
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    return run(tmp_path_factory, "settings", {"all": {"children": {"volta": {"hosts": settings_hosts()}}}})


@pytest.fixture(scope="module")
def monitoring(tmp_path_factory):
    return run(tmp_path_factory, "monitoring", monitoring_inventory())


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """Each playbook run alone on its hosts: ``{playbook: (rc, output)}``."""
    found = {}
    for playbook, children in ALONE.items():
        tmp_path = tmp_path_factory.mktemp(playbook.removesuffix(".yml"))
        inventory = tmp_path / "hosts.yml"
        inventory.write_text(yaml.safe_dump({"all": {"children": children}}))
        env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
        command = [str(REPO / ".venv" / "bin" / "ansible-playbook"), str(REPO / "playbooks" / playbook), "-i",
                   str(inventory), "--check", "--tags", "no_task_has_this_tag"]
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        found[playbook] = (proc.returncode, proc.stdout + proc.stderr)
    return found


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return run_site(tmp_path_factory.mktemp("example"), EXAMPLE, "--tags", "preflight")


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_each_firewall_and_exporters_mistake_is_named_before_any_change(settings, name):
    rc, out = settings
    assert rc != 0
    assert SETTINGS[name] in flat(out), (name, out[-6000:])


def test_the_settings_run_stops_every_host_and_refuses_the_good_one_nothing(settings):
    rc, out = settings
    assert rc != 0
    assert_no_crash(out, ("is of type str",))
    assert not refused(out, "good"), out[-6000:]
    assert all(refused(out, name) for name in SETTINGS), [n for n in SETTINGS if not refused(out, n)]


@pytest.mark.parametrize("name", sorted(MONITORING))
def test_each_monitoring_host_mistake_is_named_by_the_settings_play(monitoring, name):
    rc, out = monitoring
    assert rc != 0
    assert MONITORING[name] in flat(out), (name, out[-6000:])


def test_the_monitoring_run_refuses_neither_the_good_monitoring_host_nor_the_serving_host(monitoring):
    rc, out = monitoring
    assert rc != 0
    assert_no_crash(out, ("is of type str",))
    summary = next(line for line in out.splitlines() if "host(s) have incomplete settings" in line)
    assert summary.count(": prometheus_retention_") == len(MONITORING), summary
    assert " mon-good: " not in summary and " good: " not in summary, summary
    assert "mon-good: volta_server" not in out


def test_the_monitoring_inventory_of_the_docs_passes_preflight_and_the_settings_play(example):
    rc, out = example
    assert rc == 0, out[-6000:]
    recap = out[out.rindex("PLAY RECAP"):]
    for name in ("gpu01", "mon01"):
        assert re.search(rf"^{name} +: ok=\d+ +changed=0 +unreachable=0 +failed=0", recap, re.M), recap
    # The monitoring host is no serving host: preflight and the serving plays leave it out; the settings play
    # checks its settings.
    assert "mon01: volta_server" not in out
    assert "ok: [mon01]" in out


def test_the_docs_show_the_example_inventory_as_it_is():
    docs = (REPO / "docs" / "monitoring.md").read_text()
    section = docs[docs.index("## Adding the monitoring host"):]
    shown = section[section.index("```yaml\n") + len("```yaml\n"):section.index("```\n", section.index("```yaml"))]
    shipped = (EXAMPLE / "hosts.yml").read_text()
    assert shown == shipped[shipped.index("all:\n"):]
    assert yaml.safe_load(shown) == yaml.safe_load(shipped)


@pytest.mark.parametrize("name", sorted(ALONE_EXPECTED))
def test_the_exporters_and_monitoring_playbooks_alone_check_the_settings_first(alone, name):
    out = " ".join(flat(text) for _rc, text in alone.values())
    assert ALONE_EXPECTED[name] in out, (name, out[-6000:])


def test_the_playbooks_alone_stop_before_any_other_task(alone):
    for playbook, (rc, out) in alone.items():
        assert rc != 0, (playbook, out[-3000:])
        assert_no_crash(out, ("is of type str",))
        tasks = [line for line in out.splitlines() if line.startswith("TASK [")]
        assert tasks[-1].startswith(("TASK [volta.serving.exporters : Check the host's name and every setting",
                                     "TASK [Check the host's name and every setting")), (playbook, tasks)
