# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the volta.serving.serving_plan action plugin and playbooks/preflight.yml.

run() is called with a fake task and a connection that fails the test if anything touches it.
The playbook tests run ansible-playbook as a subprocess against inventories whose hosts are
unreachable on purpose (TEST-NET-1 addresses over SSH): preflight must never connect.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from ansible.errors import AnsibleActionFail
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.action.serving_plan import VAR_DEFAULTS, ActionModule

REPO = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
# The lab-only example password, published in inventories/lab/group_vars/all/README.md.
LAB_VAULT_PASSWORD = "volta-lab-example"  # noqa: S105

SXM2 = {
    "gpu_model": "Tesla V100-SXM2-32GB",
    "gpu_count": 10,
    "compute_capability": "7.0",
    "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
    "ram_gb": 512,
}
COMMAND_R = {
    "name": "command-r",
    "engine": "vllm",
    "model": "/srv/models/command-r-32b",
    "gpus": [0, 1, 2, 3],
    "tensor_parallel": 4,
    "port": 8001,
}


class NoConnection:
    """A connection that fails the test on any use beyond the attributes ActionBase reads."""

    def __init__(self):
        self._shell = SimpleNamespace(tmpdir=None)

    def __getattr__(self, name):
        raise AssertionError(f"serving_plan touched the connection: {name}")


def make_action(args):
    task = SimpleNamespace(args=args, async_val=0, check_mode=False, action="volta.serving.serving_plan")
    return ActionModule(task, NoConnection(), play_context=None, loader=None, templar=Templar(loader=DataLoader()))


def test_action_run_returns_plan_and_counts():
    action = make_action({"server": SXM2, "instances": [COMMAND_R], "api_key_instances": ["command-r"]})
    result = action.run(task_vars={"inventory_hostname": "server-a"})
    assert not result.get("failed")
    assert result["changed"] is False
    assert result["errors"] == 0
    assert result["warning_count"] == 0
    assert result["plan"]["host"] == "server-a"
    [entry] = result["plan"]["instances"]
    assert entry["unit"] == "volta-command-r.service"
    assert entry["argv"][:3] == ["/opt/volta/engines/vllm/current/venv/bin/vllm", "serve", "/srv/models/command-r-32b"]


def test_action_run_fails_listing_every_error_and_prints_warnings():
    instances = [
        {**COMMAND_R, "dtype": "bfloat16", "gpus": [0, 1, 2, 12]},
        {**COMMAND_R, "name": "second", "gpus": [4, 5, 8, 9], "port": 8001},
    ]
    action = make_action({"server": SXM2, "instances": instances, "api_key_instances": ["command-r", "second"]})
    result = action.run(task_vars={"inventory_hostname": "server-a"})
    assert result["failed"] is True
    # The errors only, one line each: no plan, no findings, no fact with the whole report.
    errors = [line for line in result["msg"].splitlines() if line.startswith("- server-a: ")]
    assert result["errors"] == len(errors) == len(result["error_rules"]) >= 3
    assert not {"plan", "findings", "ansible_facts"} & set(result)
    assert "server-a: instance command-r: field dtype" in result["msg"]
    assert "server-a: instance second: field port" in result["msg"]
    # second's TP group [4, 5, 8, 9] spans two boards: a warning, printed through Ansible's warnings.
    assert result["warning_count"] == 1
    assert any("field gpus" in w and "second" in w for w in result["warnings"])


def test_action_run_cross_checks_gpu_facts_from_task_vars():
    facts = {
        "status": "ok",
        "gpu_count": 10,
        "gpus": [{"name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}] * 10,
        "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "min_compute_capability": "7.0",
        "driver_version": "590.44.01",
        "kernel_module": "open",
    }
    action = make_action({"server": SXM2, "instances": []})
    result = action.run(task_vars={"inventory_hostname": "server-a", "ansible_facts": {"volta_gpu": facts}})
    assert result["failed"] is True
    rules = sorted(result["error_rules"])
    assert rules == ["driver-branch-above-580", "driver-open-modules", "gpu-facts-mismatch"]
    assert "field volta_server.nvlink_islands" in result["msg"]


def test_action_run_ignores_gpu_facts_that_are_not_ok():
    facts = {"status": "no_driver", "gpu_count": 0, "gpus": [], "nvlink_islands": []}
    action = make_action({"server": SXM2, "instances": [], "gpu_facts": facts})
    result = action.run(task_vars={"inventory_hostname": "server-a"})
    assert result["findings"] == []


def test_action_run_writes_the_dump(tmp_path):
    action = make_action(
        {"server": SXM2, "instances": [COMMAND_R], "api_generate_keys": True, "dump_dir": str(tmp_path / "d")}
    )
    result = action.run(task_vars={"inventory_hostname": "server-a"})
    dumped = json.loads((tmp_path / "d" / "server-a.json").read_text())
    assert result["dump_file"] == str(tmp_path / "d" / "server-a.json")
    assert dumped == result["plan"]
    assert dumped["instances"][0]["env"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1,2,3",
                                             "NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo"}


def test_action_run_rejects_unknown_arguments():
    action = make_action({"server": SXM2, "instancez": []})
    with pytest.raises(Exception, match="instancez"):
        action.run(task_vars={"inventory_hostname": "server-a"})


def test_action_run_reads_every_input_from_the_host_variables():
    # No arguments at all: what engine_service and api_gateway do. Same plan as preflight's call.
    host_vars = {
        "inventory_hostname": "server-a",
        "volta_server": SXM2,
        "volta_instances": [COMMAND_R],
        "api_gateway_keys": {"command-r": "not-passed-on-0123456789abcdef0123", "unused": ""},
        "volta_engines_root": "/srv/engines",
        "volta_secrets_dir": "/srv/secrets",
    }
    result = make_action({}).run(task_vars=host_vars)
    assert not result.get("failed"), result["msg"]
    [entry] = result["plan"]["instances"]
    assert entry["argv"][0] == "/srv/engines/vllm/current/venv/bin/vllm"
    assert entry["environment_file"] == "/srv/secrets/command-r.env"
    explicit = make_action(
        {
            "server": SXM2,
            "instances": [COMMAND_R],
            "api_key_instances": ["command-r"],
            "engines_root": "/srv/engines",
            "secrets_dir": "/srv/secrets",
            "host": "server-a",
        }
    ).run(task_vars={})
    assert explicit["plan"] == result["plan"]
    assert "not-passed-on-0123456789abcdef0123" not in json.dumps(result, default=str)


@pytest.mark.parametrize(
    ("host_vars", "rule"),
    [
        # No key of any kind: the instance is refused.
        ({}, "no-api-key"),
        # Each way of giving a key, read from the variables of api_gateway.
        ({"api_gateway_keys": {"command-r": "k" * 32}}, None),
        ({"api_gateway_keys": {"command-r": ""}}, "no-api-key"),
        ({"api_gateway_host_key": "h" * 32}, None),
        ({"api_gateway_host_key": ""}, "no-api-key"),
        ({"api_gateway_generate_keys": True}, None),
        # A published example key (inventories/sim), refused unless the inventory is a lab.
        ({"api_gateway_keys": {"command-r": "sim-test-key-command-r-not-secret"}}, "example-key"),
        ({"api_gateway_host_key": "sim-test-key-qwen72b-not-a-secret"}, "example-key"),
        ({"api_gateway_keys": {"command-r": "sim-test-key-command-r-not-secret"}, "volta_lab": True}, None),
        # Keys nginx and vLLM cannot compare, or too short: refused before any change.
        ({"api_gateway_keys": {"command-r": "k" * 31}}, "weak-api-key"),
        ({"api_gateway_keys": {"command-r": "k" * 32 + "\n"}}, "weak-api-key"),
        ({"api_gateway_keys": {"command-r": " " + "k" * 32}}, "weak-api-key"),
        ({"api_gateway_host_key": "k" * 16 + " " + "k" * 16}, "weak-api-key"),
        ({"api_gateway_host_key": "k" * 32 + '"'}, "weak-api-key"),
        ({"api_gateway_host_key": "k" * 31, "api_gateway_keys": {"command-r": "k" * 40}}, "weak-api-key"),
        ({"api_gateway_keys": {"command-r": "Ab0._~+/=-" * 4}}, None),
        # The rate limit of requests without the key, pasted into nginx.
        ({"api_gateway_generate_keys": True, "api_gateway_unauthorized_rate": "30r/m; allow all"}, "invalid-value"),
        ({"api_gateway_generate_keys": True, "api_gateway_unauthorized_burst": "20 nodelay"}, "invalid-value"),
        ({"api_gateway_generate_keys": True, "api_gateway_unauthorized_rate": "2r/s",
          "api_gateway_unauthorized_burst": 0}, None),
        # Driver, CUDA and torch versions from the roles' variables.
        ({"api_gateway_generate_keys": True, "nvidia_driver_branch": 590}, "driver-branch-above-580"),
        ({"api_gateway_generate_keys": True, "nvidia_driver_kernel_module": "open"}, "driver-open-modules"),
        ({"api_gateway_generate_keys": True, "cuda_toolkit_version": "13.0"}, "cuda-13-on-sm70"),
        ({"api_gateway_generate_keys": True, "engine_vllm_torch_cuda": "cu130"}, "torch-without-sm70"),
        # The SSH port and the reserved ports of the host.
        ({"api_gateway_generate_keys": True, "ansible_port": 8001}, "port-collision"),
        ({"api_gateway_generate_keys": True, "preflight_reserved_ports": {8001: "node exporter"}}, "port-collision"),
    ],
)
def test_action_run_defaults_follow_the_host_variables(host_vars, rule):
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R], **host_vars}
    result = make_action({}).run(task_vars=task_vars)
    errors = sorted(set(result.get("error_rules", [])))
    assert errors == ([rule] if rule else []), result["msg"]


def test_action_run_names_the_example_key_and_never_shows_it():
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_keys": {"command-r": "sim-test-key-command-r-not-secret", "other": "x" * 32}}  # fmt: skip
    result = make_action({}).run(task_vars=task_vars)
    assert result["failed"]
    assert "server-a: host-wide: field api_gateway_keys[command-r]: api_gateway_keys[command-r] is a published " \
        "example key (from inventories/sim (command-r))." in result["msg"]
    assert "sim-test-key-command-r-not-secret" not in json.dumps(result, default=str)


@pytest.mark.parametrize(
    ("keys", "problem"),
    [
        ({"api_gateway_keys": {"command-r": "short-key-0123456789"}}, "is 20 characters long, shorter than 32"),
        ({"api_gateway_keys": {"command-r": "a-key-with-a-newline-at-its-end-0123\n"}}, "contains whitespace"),
        ({"api_gateway_keys": {"command-r": "a key with spaces 0123456789abcdef"}}, "contains whitespace"),
        ({"api_gateway_keys": {"command-r": "a-key-with-a-quote-\"-0123456789abcdef"}},
         "contains characters other than A-Z a-z 0-9 . _ ~ + / = -"),
    ],
)
def test_action_run_refuses_weak_keys_naming_where_never_the_key(keys, problem):
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R], **keys}
    result = make_action({}).run(task_vars=task_vars)
    assert result["failed"]
    assert f"server-a: host-wide: field api_gateway_keys[command-r]: the key in api_gateway_keys[command-r] {problem}" \
        in result["msg"]
    assert "(openssl rand -hex 32)" in result["msg"]
    assert keys["api_gateway_keys"]["command-r"].strip() not in json.dumps(result, default=str)


def test_action_run_arguments_win_over_host_variables():
    task_vars = {
        "inventory_hostname": "server-a",
        "volta_server": SXM2,
        "volta_instances": [],
        "nvidia_driver_branch": "590",
    }
    result = make_action({"instances": [COMMAND_R], "api_generate_keys": True, "driver_branch": "580"}).run(
        task_vars=task_vars
    )
    assert not result.get("failed"), result["msg"]
    assert [i["name"] for i in result["plan"]["instances"]] == ["command-r"]


def test_action_run_profiles_and_ram_from_preflight_variables():
    task_vars = {
        "inventory_hostname": "server-a",
        "volta_server": {**SXM2, "ram_gb": 64},
        "volta_instances": [COMMAND_R],
        "api_gateway_generate_keys": True,
        "preflight_engine_profiles": {"vllm": {"gpu_memory_utilization": 0.85}},
        "preflight_host_ram_need_gb": {"dense": 200},
    }
    result = make_action({}).run(task_vars=task_vars)
    [entry] = result["plan"]["instances"]
    assert entry["argv"][entry["argv"].index("--gpu-memory-utilization") + 1] == "0.85"
    assert result["warning_count"] >= 1
    assert result["warnings"]


def test_action_run_report_warnings_false_keeps_the_count_only():
    instances = [{**COMMAND_R, "gpus": [2, 3, 4, 5]}]  # TP group across two boards: a warning
    result = make_action({"report_warnings": False}).run(
        task_vars={"inventory_hostname": "a", "volta_server": SXM2, "volta_instances": instances,
                   "api_gateway_generate_keys": True}
    )  # fmt: skip
    assert result["warning_count"] == 1
    assert "warnings" not in result


def test_action_run_missing_server_fails_in_one_line():
    with pytest.raises(AnsibleActionFail) as info:
        make_action({}).run(task_vars={"inventory_hostname": "server-a"})
    assert str(info.value).startswith(
        "server-a: volta_server: expected a mapping (gpu_model, gpu_count, compute_capability, nvlink_islands, "
        "ram_gb), got nothing (not set, or null). Fix: describe the machine in host_vars/server-a.yml"
    )


def test_an_input_that_cannot_be_read_is_named_with_its_expression():
    # The inputs are read in one expression; when it fails, the error still names the argument that failed.
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_unauthorized_burst": trust_as_template("{{ 1 / 0 }}")}
    with pytest.raises(AnsibleActionFail) as info:
        make_action({}).run(task_vars=task_vars)
    assert str(info.value).startswith(
        "serving_plan: cannot read gateway from the host's variables ({'listen_address': ")
    assert "division by zero" in str(info.value)


def test_the_inputs_read_in_one_expression_equal_each_read_alone():
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_keys": {"command-r": "k" * 32, "other": ""}, "api_gateway_host_key": "h" * 32,
                 "nvidia_driver_branch": 580, "engine_vllm_torch_cuda": "cu126", "firewall_api_cidrs": ["10.0.0.0/8"],
                 "ansible_facts": {"volta_gpu": {"status": "ok", "gpus": []}}}
    templar = Templar(loader=DataLoader(), variables=task_vars)
    each = {name: ActionModule._read_named(templar, name, expression) for name, expression in VAR_DEFAULTS.items()}
    assert ActionModule._read_defaults(templar, list(VAR_DEFAULTS)) == each
    assert each["gateway"]["key_shapes"] == {"api_gateway_keys[command-r]": "a" * 32, "api_gateway_host_key": "a" * 32}
    assert each["driver_branch"] == "580"


@pytest.mark.parametrize(
    ("host_vars", "message"),
    [
        ({"api_gateway_keys": ["command-r"]},
         "server-a: api_gateway_keys: expected a mapping of instance name -> API key, got a list of 1 item. Fix:"),
        ({"volta_instances": "command-r"},
         "server-a: volta_instances: expected a list of instances (mappings with name, engine, model, gpus, port), "
         "got the string 'command-r'. Fix:"),
        ({"volta_instances": [COMMAND_R, 7]}, "server-a: volta_instances[1]: expected an instance"),
        ({"volta_server": {**SXM2, "gpu_count": -1}},
         "server-a: volta_server.gpu_count: expected a whole number of GPUs, at least 1, got the number -1."),
    ],
)  # fmt: skip
def test_action_run_wrong_types_fail_in_one_line_before_any_expression(host_vars, message):
    # Before: "dict2items requires a dictionary" (a list of keys), an argument-spec message without the host.
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_keys": {"command-r": "k" * 40}, **host_vars}  # fmt: skip
    with pytest.raises(AnsibleActionFail) as info:
        make_action({}).run(task_vars=task_vars)
    assert str(info.value).startswith(message), str(info.value)
    assert "dict2items" not in str(info.value)


# ------------------------------------------------------------------------------------------------
# playbooks/preflight.yml as a subprocess: controller only, unreachable hosts.
# ------------------------------------------------------------------------------------------------


def run_preflight(inventory, tmp_path, *extra, playbook="preflight.yml"):
    password = tmp_path / "vault-pass"
    password.write_text(LAB_VAULT_PASSWORD + "\n", encoding="utf-8")
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_INJECT_FACT_VARS": "false",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_SSH_TIMEOUT": "3",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
    }
    command = [
        str(ANSIBLE_PLAYBOOK),
        str(REPO / "playbooks" / playbook),
        "-i",
        str(inventory),
        "--vault-password-file",
        str(password),
        "-e",
        "volta_preflight_detect=false",
        *extra,
    ]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def unreachable_copy(name, tmp_path):
    """Copy inventories/<name> and point every host at an unreachable TEST-NET-1 address over SSH."""
    dest = tmp_path / name
    shutil.copytree(REPO / "inventories" / name, dest)
    hosts_file = dest / "hosts.yml"
    hosts = yaml.safe_load(hosts_file.read_text())
    for number, host in enumerate(hosts["all"]["children"]["volta"]["hosts"].values(), start=1):
        host["ansible_host"] = f"192.0.2.{number}"
        host["ansible_connection"] = "ssh"
    hosts_file.write_text(yaml.safe_dump(hosts))
    return dest


def inventory_keys(name):
    """The API keys an inventory ships (the lab's decrypted with its published example password)."""
    if name == "sim":
        data = yaml.safe_load((REPO / "inventories/sim/group_vars/volta/api_keys_TEST_ONLY.yml").read_text())
        return list(data["api_gateway_keys"].values())
    vault = VaultLib([("default", VaultSecret(LAB_VAULT_PASSWORD.encode()))])

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!vault", lambda loader, node: loader.construct_scalar(node))
    data = yaml.load((REPO / "inventories/lab/group_vars/all/vault.yml").read_text(), Loader=Loader)  # noqa: S506
    keys = [vault.decrypt(value).decode() for value in data["api_gateway_keys"].values()]
    assert all(len(key) >= 32 for key in keys)
    return keys


def test_an_unreachable_host_is_waited_for_then_stopped_with_the_reason(tmp_path):
    # Detection on, hosts at TEST-NET-1 addresses: the first read of each host does not connect; preflight waits
    # for it, then stops it with the reason and the fix.
    inventory = unreachable_copy("sim", tmp_path)
    rc, out = run_preflight(inventory, tmp_path, "-e", "volta_preflight_detect=true",
                            "-e", "preflight_connect_timeout=1")
    assert rc != 0, out
    for host, address in (("sxm2", "192.0.2.1"), ("pcie", "192.0.2.2")):
        # The read itself waited (volta.serving.gpu_facts connect_wait: preflight_connect_timeout * 2).
        assert re.search(rf"{host}: unreachable \(timed out waiting 2 s for the host to answer: .*{re.escape(address)}",
                         out), out
        assert f"leave it out of this run with --limit '!{host}'" in out
        assert re.search(rf"{host}\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", out), out


@pytest.mark.parametrize(("name", "hosts"), [("lab", ["server-a", "server-b"]), ("sim", ["sxm2", "pcie"])])
def test_preflight_playbook_passes_on_shipped_inventories(name, hosts, tmp_path):
    inventory = unreachable_copy(name, tmp_path)
    dump = tmp_path / "plans"
    rc, out = run_preflight(inventory, tmp_path, "-e", f"volta_plan_dump={dump}")
    assert rc == 0, out
    assert "unreachable=0" in out
    assert "UNREACHABLE" not in out
    for host in hosts:
        assert re.search(rf"{host}\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out
        plan = json.loads((dump / f"{host}.json").read_text())
        assert plan["host"] == host
        for entry in plan["instances"]:
            assert {"name", "engine", "unit", "argv", "env"} <= set(entry)
            assert entry["argv"][entry["argv"].index("--host") + 1] == "127.0.0.1"
        # The keys of the inventory never reach the plan.
        dumped = (dump / f"{host}.json").read_text()
        for key in inventory_keys(name):
            assert key not in dumped
            assert key not in out
    if name == "lab":
        server_a = json.loads((dump / "server-a.json").read_text())
        assert [(i["name"], i["enabled"]) for i in server_a["instances"]] == [
            ("qwen72b", True),
            ("command-r", False),
            ("deepseek-lite", True),
        ]


def test_preflight_playbook_refuses_the_lab_keys_in_a_copy_that_is_not_a_lab(tmp_path):
    # "Copy this inventory" without deleting the published example keys: preflight stops.
    inventory = unreachable_copy("lab", tmp_path)
    (inventory / "group_vars" / "all" / "lab.yml").unlink()
    rc, out = run_preflight(inventory, tmp_path)
    assert rc != 0, out
    for name in ("qwen72b", "deepseek-lite"):
        assert (f"server-a: host-wide: field api_gateway_keys[{name}]: api_gateway_keys[{name}] is a published "
                f"example key (from inventories/lab ({name}))") in out, out  # fmt: skip
    for key in inventory_keys("lab"):
        assert key not in out


def test_preflight_playbook_fails_listing_every_finding_of_every_host(tmp_path):
    inventory = unreachable_copy("sim", tmp_path)
    sxm2 = yaml.safe_load((inventory / "host_vars" / "sxm2.yml").read_text())
    sxm2["volta_instances"][0]["dtype"] = "bfloat16"  # qwen72b
    sxm2["volta_instances"][2]["extra_args"] = ["--host", "0.0.0.0"]  # noqa: S104 - deepseek-lite, must fail
    (inventory / "host_vars" / "sxm2.yml").write_text(yaml.safe_dump(sxm2))
    pcie = yaml.safe_load((inventory / "host_vars" / "pcie.yml").read_text())
    pcie["volta_instances"][1]["mtp"] = True  # flash-next-b: FP8 KV + MTP, and MTP on PCIe TP=4
    pcie["volta_instances"][1]["port"] = 8001  # collides with flash-next-a
    (inventory / "host_vars" / "pcie.yml").write_text(yaml.safe_dump(pcie))

    rc, out = run_preflight(inventory, tmp_path)
    assert rc != 0, out
    assert "UNREACHABLE" not in out
    for expected in (
        "sxm2: instance qwen72b: field dtype",
        "sxm2: instance deepseek-lite: field extra_args: --host 0.0.0.0",
        "pcie: instance flash-next-b: field kv_cache_dtype",
        "pcie: instance flash-next-b: field port: port 8001",
        "pcie: instance flash-next-b: field mtp",  # the warning is printed too
    ):
        assert expected in out, out
    assert re.search(r"sxm2\s+: .*failed=1", out), out
    assert re.search(r"pcie\s+: .*failed=1", out), out


def test_preflight_playbook_on_the_shipped_sim_inventory_as_is(tmp_path):
    # The sim inventory unchanged (Docker connection to containers that do not run here) and
    # without a vault password: it has no vault, and preflight never opens a connection.
    inventory = REPO / "inventories" / "sim"
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
    }
    proc = subprocess.run(
        [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "preflight.yml"), "-i", str(inventory),
         "-e", "volta_preflight_detect=false"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------------------------------------
# playbooks/settings.yml: every layer's own settings checks, before any change, controller only.
# ------------------------------------------------------------------------------------------------


def test_settings_playbook_stops_the_shipped_lab_inventory_naming_what_to_fill_in(tmp_path):
    inventory = unreachable_copy("lab", tmp_path)
    rc, out = run_preflight(inventory, tmp_path, playbook="settings.yml")
    flat = re.sub(r"\s+", " ", out)
    assert rc != 0, out
    assert "UNREACHABLE" not in out
    assert "2 host(s) have incomplete settings, nothing was changed on any host" in flat, out
    # server-a runs llama.cpp (deepseek-lite), server-b runs 1Cat-vLLM: group_vars/volta.yml leaves
    # both pins for the user to fill in.
    assert "server-a: engine_llamacpp_ref is not set and engine_llamacpp_source_sha256 is not set" in flat, out
    assert "server-b: engine_onecat_sha256 is not set. Why: an instance runs on 1Cat-vLLM" in flat, out
    # The summary names each host once, and an unset ref renders no half URL (".../tags/.tar.gz").
    summary = flat[flat.index("2 host(s) have incomplete settings"):]
    assert "server-a: server-a:" not in summary and "server-b: server-b:" not in summary, out
    assert "tags/.tar.gz" not in flat, out


def test_settings_playbook_passes_the_lab_inventory_once_filled_in(tmp_path):
    inventory = unreachable_copy("lab", tmp_path)
    rc, out = run_preflight(inventory, tmp_path, "-e", "engine_onecat_sha256=" + "ab" * 32,
                            "-e", "engine_llamacpp_ref=b1234", "-e", "engine_llamacpp_source_sha256=" + "cd" * 32,
                            playbook="settings.yml")
    assert rc == 0, out
    for host in ("server-a", "server-b"):
        assert re.search(rf"{host}\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out


def test_settings_playbook_names_a_bad_firewall_network(tmp_path):
    inventory = unreachable_copy("sim", tmp_path)
    rc, out = run_preflight(inventory, tmp_path, "-e", '{"firewall_ssh_cidrs": ["10.0.0.5/8"]}',
                            playbook="settings.yml")
    flat = re.sub(r"\s+", " ", out)
    assert rc != 0, out
    assert "2 host(s) have incomplete settings" in flat, out
    # The settings check (volta.serving.settings, the registry's strict cidr_list) names it before the firewall's.
    assert 'sxm2: firewall_ssh_cidrs: entry 1 of the list: "10.0.0.5/8" has host bits set' in flat, out


def test_the_ssh_port_collision_uses_firewall_ssh_port(tmp_path):
    # sxm2's qwen72b gateway port is 8002: the firewall keeps firewall_ssh_port open for SSH.
    inventory = unreachable_copy("sim", tmp_path)
    rc, out = run_preflight(inventory, tmp_path, "-e", "firewall_ssh_port=8002", "-e", "volta_preflight_detect=false")
    flat = re.sub(r"\s+", " ", out)
    assert rc != 0, out
    assert "port 8002 (the gateway's public port) is already taken by SSH (firewall_ssh_port)" in flat, out


def test_action_run_serves_the_directory_of_the_model_source():
    # volta_models + model_source (role volta.serving.model): the plan's model is the versioned directory.
    commit = "c" * 40
    inst = {k: v for k, v in COMMAND_R.items() if k != "model"}
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "api_gateway_generate_keys": True,
                 "volta_instances": [dict(inst, model_source="cr")], "volta_models_root": "/data/models",
                 "volta_models": {"cr": {"hf": {"repo": "CohereForAI/c4ai-command-r-v01", "revision": commit}}}}
    result = make_action({}).run(task_vars=task_vars)
    assert not result.get("failed"), result["msg"]
    [entry] = result["plan"]["instances"]
    assert entry["model"] == f"/data/models/cr@{commit}"
    assert f"/data/models/cr@{commit}" in entry["argv"]
    task_vars["volta_instances"] = [dict(inst, model_source="nope")]
    with pytest.raises(Exception, match="model_source 'nope' is not in volta_models"):
        make_action({}).run(task_vars=task_vars)


def test_a_later_layer_reuses_the_plan_only_with_the_same_inputs(monkeypatch):
    from ansible_collections.volta.serving.plugins.action import serving_plan

    args = {"server": SXM2, "instances": [COMMAND_R], "api_key_instances": ["command-r"]}
    first = make_action(args).run(task_vars={"inventory_hostname": "server-a"})
    assert first["reused"] is False
    fact = first["ansible_facts"]["volta_serving_plan"]
    built = []
    monkeypatch.setattr(serving_plan, "build_report", lambda *a, **k: built.append(a) or {})
    cached = {"inventory_hostname": "server-a", "ansible_facts": {"volta_serving_plan": fact}}
    again = make_action(args).run(task_vars=cached)
    assert (again["reused"], built, "ansible_facts" in again) == (True, [], False)
    assert again["plan"] == first["plan"] and again["msg"] == first["msg"]
    # Another input (a GPU read after the driver came up, another port): built again, not reused.
    moved = dict(COMMAND_R, port=8002)
    monkeypatch.undo()
    other = make_action(dict(args, instances=[moved])).run(task_vars=cached)
    assert other["reused"] is False
    assert "8002" in json.dumps(other["plan"]["instances"][0])
    assert "8002" not in json.dumps(first["plan"]["instances"][0])
    assert other["ansible_facts"]["volta_serving_plan"]["inputs"] != fact["inputs"]


# ------------------------------------------------------------------------------------------------
# preflight: true, the controller-side checks of the host's variables (the index read is injected).
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def index(monkeypatch):
    """The releases the action reads from engine_pypi_index_url, without the network; records the calls."""
    from ansible_collections.volta.serving.plugins.action import serving_plan as plugin

    calls = []

    def read_releases(url, project, read):
        calls.append((url, project))
        return {"project": project, "index": url, "versions": ["0.19.1", "0.21.0", "0.22.0"], "error": None}

    monkeypatch.setattr(plugin, "read_releases", read_releases)
    return calls


def preflight_run(**host_vars):
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_generate_keys": True, "firewall_api_cidrs": ["10.0.0.0/8"], **host_vars}
    return make_action({"preflight": True}).run(task_vars=task_vars)


@pytest.mark.parametrize(
    ("host_vars", "rule", "text"),
    [
        ({"firewall_api_cidr": ["10.0.0.0/8"]}, "unknown-variable",
         "server-a: host-wide: field firewall_api_cidr: firewall_api_cidr is not a variable of any volta.serving role"),
        ({"nvidia_driver_version": "590.44.01"}, "driver-version-branch",
         "server-a: host-wide: field nvidia_driver_version: nvidia_driver_version 590.44.01 is not a version of "
         "driver branch 580"),
        ({"engine_vllm_version": "0.99.0"}, "engine-version",
         "engine_vllm_version 0.99.0 is not a release of vllm on https://pypi.org/simple"),
        ({"engine_vllm_version": "latest"}, "engine-version", "engine_vllm_version 'latest' is not a release version"),
        ({"engine_onecat_sha256": "a" * 64}, "pin-format", "field engine_onecat_sha256: engine_onecat_sha256"),
        ({"firewall_api_cidrs": []}, "api-cidrs-empty", "field firewall_api_cidrs: firewall_api_cidrs is empty"),
    ],
)
def test_preflight_refuses_the_controller_visible_mistakes(index, host_vars, rule, text):
    result = preflight_run(**host_vars)
    assert result.get("failed") is True, result["msg"]
    assert result["error_rules"] == [rule]
    assert text in result["msg"]
    assert "plan" not in result


def test_preflight_reads_the_index_once_for_a_well_formed_vllm_pin_and_passes(index):
    result = preflight_run(engine_vllm_version="0.21.0", preflight_unknown_variables="error")
    assert not result.get("failed"), result["msg"]
    assert index == [("https://pypi.org/simple", "vllm")]
    assert "not run (2): model rules" in result["msg"]
    preflight_run(engine_vllm_version="latest")
    assert len(index) == 1  # a malformed pin is refused for its form, the index is not read


def test_preflight_warn_mode_and_facts_are_not_variables(index):
    result = preflight_run(firewall_api_cidr=["10.0.0.0/8"], volta_unknown_variables="warn",
                           ansible_facts={"volta_gpu": {}}, volta_gpu={"status": "injected"})
    assert not result.get("failed"), result["msg"]
    assert any("did you mean firewall_api_cidrs?" in w for w in result["warnings"])
    assert not any("volta_gpu" in w for w in result["warnings"])


def test_later_layers_do_not_check_variables(index):
    task_vars = {"inventory_hostname": "server-a", "volta_server": SXM2, "volta_instances": [COMMAND_R],
                 "api_gateway_generate_keys": True, "engine_fixups_result": {}, "firewall_api_cidr": []}
    result = make_action({}).run(task_vars=task_vars)
    assert not result.get("failed"), result["msg"]
    assert index == []
