# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad input of the engine units: playbooks/site.yml on the controller (volta_preflight_detect=false).

Issue 52: engine_service_read_write_paths and engine_service_ip_address_allow were joined raw into every unit
(a newline added an ``ExecStartPre=+...`` line, run as root); root as the engines' account, every address as
their IP filter, / as a writable path, a weak Ray token, ``service_port`` on an instance over several hosts and
an instance port on the exporters' port passed silently; a Ray ``cluster:`` instance could never pass this
controller-only preflight (cluster-interface was an error where the facts were not read).

Each host makes one mistake; each is asserted by its message (host, variable, why, fix), before any host layer.
Preflight stops every host at the first of its stages that refuses one (any_errors_fatal): the settings check
(registry) first, then the serving plan. So one run holds the settings mistakes, and a second the plan's, each
inventory with good hosts that pass their stage: a plain one and a Ray cluster of two members, which passes the
controller-only preflight with cluster-interface "not run". No test here reaches the network: the index is a
closed local port.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "ram_gb": 512}  # fmt: skip
KEY = "units-bad-input-key-not-a-secret-0123456789"
COMMON = {"ansible_connection": "local", "firewall_api_cidrs": ["10.0.0.0/8"], "firewall_ssh_cidrs": ["10.0.0.0/8"],
          "engine_pypi_index_url": "http://127.0.0.1:9/simple"}  # fmt: skip
INJECTED = "ExecStartPre=+/bin/sh -c 'id > /root/owned'"
# Weak Ray tokens: never in the output.
SHORT_TOKEN = "ray-short-0123"  # noqa: S105  a test value, refused
PLACEHOLDER_TOKEN = "replace-me-with-the-ray-token-of-the-cluster"  # noqa: S105  a test value, refused


def chat(**changes):
    return {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "gpus": [0], "port": 8001, **changes}


def host(instances=None, **variables):
    return {**COMMON, "volta_server": SERVER, "volta_instances": instances or [chat()],
            "api_gateway_keys": {"chat": KEY}, **variables}  # fmt: skip


def big(members, **changes):
    """A vLLM instance over the two hosts *members* (TP 4 inside each, PP 2 across)."""
    return {"name": "big", "engine": "vllm", "model": "/srv/models/big", "gpus": [0, 1, 2, 3], "tensor_parallel": 4,
            "pipeline_parallel": 2, "max_model_len": 8192, "port": 8010,
            "cluster": {"members": members, "interface": "ens1f0"}, **changes}


def cluster(prefix, **changes):
    """Two hosts, ``<prefix>-head`` and ``<prefix>-worker``, members of one instance (with *changes*)."""
    members = [f"{prefix}-head", f"{prefix}-worker"]
    return {name: host([big(members, **changes)], api_gateway_keys={"big": KEY}) for name in members}


# The settings stage: one mistake per host, each a value that reaches a unit line or the Ray token file.
SETTINGS_HOSTS = {
    "good": host(engine_service_read_write_paths=["/srv/volta-scratch"],
                 engine_service_ip_address_allow=["localhost", "10.20.0.0/16"]),
    "rw-newline": host(engine_service_read_write_paths=[f"/srv/data\n{INJECTED}"]),
    "ip-newline": host(engine_service_ip_address_allow=[f"localhost\n{INJECTED}"]),
    "user-root": host(engine_service_user="root"),
    "user-uid0": host(engine_service_user=0),
    "group-root": host(engine_service_group="root"),
    "groups-disk": host(engine_service_device_groups=["video", "render", "disk"]),
    "ip-any": host(engine_service_ip_address_allow=["any"]),
    "ip-all4": host(engine_service_ip_address_allow=["localhost", "0.0.0.0/0"]),
    "ip-all6": host(engine_service_ip_address_allow=["::/0"]),
    "rw-root": host(engine_service_read_write_paths=["/"]),
    "rw-etc": host(engine_service_read_write_paths=["/srv/data", "/etc"]),
    "rw-var": host(engine_service_read_write_paths=["/var"]),
    "rw-relative": host(engine_service_read_write_paths=["data/cache"]),
    "home-usr": host(engine_service_home="/usr/local/volta"),
    "token-short": host(engine_service_ray_token=SHORT_TOKEN),
    "token-placeholder": host(engine_service_ray_token=PLACEHOLDER_TOKEN),
    "ray-ports-partial": host(engine_service_ray_ports={"gcs": 6379}),
    "timeout-zero": host(engine_service_start_timeout=0),
}

SETTINGS_EXPECTED = {
    "rw-newline": ['rw-newline: engine_service_read_write_paths: entry 1 of the list: "/srv/data\\nExecStartPre='
                   "+/bin/sh -c 'id > /root/owned'\" contains the control character(s) '\\n': in a unit it would "
                   "end the line and start one of its own (ExecStartPre=+... runs as root). Fix: set "
                   "engine_service_read_write_paths to absolute paths of directories of the engines' own"],
    "ip-newline": ['ip-newline: engine_service_ip_address_allow: entry 1 of the list: "localhost\\nExecStartPre=+',
                   "contains the control character(s) '\\n': in a unit it would end the line"],
    "user-root": ['user-root: engine_service_user: "root" is the superuser: the engines would run with root\'s '
                  "rights. Fix: set engine_service_user to an account of the engines' own, such as volta"],
    "user-uid0": ["user-uid0: engine_service_user: 0 is the superuser (id 0): the engines would run with root's "
                  "rights. Fix: set engine_service_user to an account of the engines' own"],
    "group-root": ['group-root: engine_service_group: "root" is the superuser\'s group: the engines would run with '
                   "root's rights. Fix: set engine_service_group to a group of the engines' own, such as volta."],
    "groups-disk": ['groups-disk: engine_service_device_groups: entry 3 of the list: "disk" gives the engines more '
                    "than the GPUs: it has raw access to every disk. Fix: set engine_service_device_groups to the "
                    "groups of the GPU device nodes only, such as [video, render]."],
    "ip-any": ['ip-any: engine_service_ip_address_allow: entry 1 of the list: "any" allows every address, which '
               "turns the engines' IP filter off while it looks on. Fix: set engine_service_ip_address_allow to "
               "networks the engines must reach, such as [localhost, 10.20.0.0/16]; [] turns the filter off"],
    "ip-all4": ['ip-all4: engine_service_ip_address_allow: entry 2 of the list: "0.0.0.0/0" allows every IPv4 '
                "address, which turns the IP filter off. Fix:"],
    "ip-all6": ['ip-all6: engine_service_ip_address_allow: entry 1 of the list: "::/0" allows every IPv6 address'],
    "rw-root": ['rw-root: engine_service_read_write_paths: entry 1 of the list: "/" is the root of the file system: '
                "an engine would write every service's files there. Fix: set engine_service_read_write_paths to "
                "absolute paths of directories of the engines' own, such as /srv/volta-scratch."],
    "rw-etc": ['rw-etc: engine_service_read_write_paths: entry 2 of the list: "/etc" is the system\'s configuration '
               "(systemd units, sudoers, cron, the API keys under /etc/volta): an engine that writes there can change "
               "what root runs. Fix:"],
    "rw-var": ['rw-var: engine_service_read_write_paths: entry 1 of the list: "/var" is the parent of every service\'s '
               "state, logs and queues"],
    "rw-relative": ['rw-relative: engine_service_read_write_paths: entry 1 of the list: "data/cache" is not an '
                    "absolute path: systemd refuses a relative one. Fix:"],
    "home-usr": ['home-usr: engine_service_home: "/usr/local/volta" is inside /usr, the system\'s programs and '
                 "libraries: an engine that writes there can change what root runs. Fix:"],
    "token-short": ["token-short: engine_service_ray_token: the token (not shown) is 14 characters long, shorter "
                    "than 32: whoever reaches Ray's ports runs code on every member with it. Fix: put a token of "
                    "at least 32 random characters in Ansible Vault (openssl rand -hex 32), or set "
                    'engine_service_ray_token to "" and the head generates one.'],
    "token-placeholder": ["token-placeholder: engine_service_ray_token: the token (not shown) reads like a "
                          "placeholder (a word such as replace, example, secret or token, or few distinct "
                          "characters), not a random secret. Fix:"],
    "ray-ports-partial": ["ray-ports-partial: engine_service_ray_ports: it lacks node_manager, object_manager, "
                          "runtime_env_agent, dashboard_agent_grpc, dashboard_agent_listen, metrics_export, "
                          "worker_min, worker_max. Fix: set engine_service_ray_ports to a mapping of every one of"],
    "timeout-zero": ["timeout-zero: engine_service_start_timeout: 0 is not a whole number of at least 1. Fix: set "
                     "engine_service_start_timeout to a whole number of at least 1."],
}

# The serving plan's stage: every host's settings pass; the plan refuses these.
PLAN_HOSTS = {
    "plan-good": host(),
    **cluster("ray-good"),
    **cluster("ray-svc", service_port=8000),
    "port-node-exporter": host([chat(port=9100)]),
    "backend-exporter": host([chat(backend_port=9402)], exporters_listen_address="0.0.0.0"),  # noqa: S104  a setting
}

PLAN_EXPECTED = {
    "ray-svc-head": ["ray-svc-head: instance big: field service_port: big runs over several hosts (cluster.members "
                     "ray-svc-head, ray-svc-worker), and service_port 8000 is set. Why: an instance over several "
                     "hosts is served by its head alone", "Fix: remove service_port from big: its clients use port "
                     "8010 on ray-svc-head"],
    "ray-svc-worker": ["ray-svc-worker: instance big: field service_port: big runs over several hosts"],
    "port-node-exporter": ["port-node-exporter: instance chat: field port: port 9100 (the gateway's public port) is "
                           "also node_exporter's port (exporters_node_exporter_port), on 127.0.0.1. Why: two "
                           "listeners cannot share a port: node_exporter (roles/exporters) or the gateway fails to "
                           "start, after the hosts changed. Fix: choose another port for chat, or move "
                           "exporters_node_exporter_port"],
    "backend-exporter": ["backend-exporter: instance chat: field backend_port: backend_port 9402 (the engine's "
                         "loopback port) is also volta-exporter's port (exporters_port), on 0.0.0.0."],
}


def run_site(tmp_path, hosts):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"volta": {"hosts": hosts}}}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}  # fmt: skip
    # --tags preflight: the preflight and settings plays only, so that a mistake no check refuses can never go
    # on to change this machine (the hosts connect locally); the run must fail in preflight all the same.
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "site.yml"), "-i", str(inventory),
               "-e", "volta_preflight_detect=false", "--tags", "preflight"]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def settings_run(tmp_path_factory):
    return run_site(tmp_path_factory.mktemp("settings"), SETTINGS_HOSTS)


@pytest.fixture(scope="module")
def plan_run(tmp_path_factory):
    return run_site(tmp_path_factory.mktemp("plan"), PLAN_HOSTS)


def flat(out):
    return " ".join(out.split())


def failed_hosts(out):
    return {line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if line.startswith("fatal: [")}


def test_every_case_is_a_host():
    assert set(SETTINGS_EXPECTED) == set(SETTINGS_HOSTS) - {"good"}
    assert set(PLAN_EXPECTED) <= set(PLAN_HOSTS)


@pytest.mark.parametrize("name", sorted(SETTINGS_EXPECTED))
def test_each_settings_mistake_is_named_before_any_change(settings_run, name):
    rc, out = settings_run
    assert rc != 0
    for text in SETTINGS_EXPECTED[name]:
        assert text in flat(out), (name, text, out[-6000:])


@pytest.mark.parametrize("name", sorted(PLAN_EXPECTED))
def test_each_plan_mistake_is_named_before_any_change(plan_run, name):
    rc, out = plan_run
    assert rc != 0
    for text in PLAN_EXPECTED[name]:
        assert text in flat(out), (name, text, out[-6000:])


@pytest.mark.parametrize("fixture", ["settings_run", "plan_run"])
def test_only_the_mistakes_fail_and_no_host_layer_starts(request, fixture):
    out = request.getfixturevalue(fixture)[1]
    expected = set(SETTINGS_EXPECTED if fixture == "settings_run" else PLAN_EXPECTED)
    assert failed_hosts(out) == expected, out[-4000:]
    for play in ("PLAY [Driver and CUDA toolkit]", "PLAY [Engine", "PLAY [Serving"):
        assert play not in out


def test_the_injected_line_and_the_weak_tokens_never_reach_a_unit_or_the_output(settings_run):
    out = settings_run[1]
    # The injected line is only ever shown escaped, inside the refusal (a newline as \n).
    assert f"\n{INJECTED}" not in out
    assert SHORT_TOKEN not in out and PLACEHOLDER_TOKEN not in out


def test_a_ray_cluster_passes_the_controller_only_preflight_with_cluster_interface_not_run(plan_run):
    out = plan_run[1]
    plan_task = out[out.index("TASK [volta.serving.preflight : Check the serving plan against the V100 rules]"):]
    plan_task = plan_task[:plan_task.index("\nTASK [") if "\nTASK [" in plan_task else len(plan_task)]
    for name in ("ray-good-head", "ray-good-worker", "plan-good"):
        assert f"ok: [{name}]" in plan_task, plan_task[-3000:]
    assert "field cluster.interface" not in out


def run_example_cluster(tmp_path, playbook):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}  # fmt: skip
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / playbook), "-i",
               str(REPO / "inventories" / "example-cluster"), "-e", "volta_preflight_detect=false"]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_example_cluster_passes_the_documented_controller_only_preflight_and_the_settings(tmp_path):
    # Before: server-a and server-c failed with "the network facts of server-a were not read" (cluster-interface).
    rc, out = run_example_cluster(tmp_path, "preflight.yml")
    assert rc == 0, out[-4000:]
    text = flat(out)
    assert "field cluster.interface" not in text
    assert ("cluster-interface (the address of ens1f0 on every member of big): the network facts of server-a, "
            "server-c were not read (volta_preflight_detect=false)") in text
    rc, out = run_example_cluster(tmp_path, "settings.yml")
    assert rc == 0, out[-4000:]
