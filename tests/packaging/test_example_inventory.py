"""inventories/example through the controller-only preflight and playbooks/discover.yml, from the clone.

The example is what an operator copies for a first server; it must pass preflight once its API key
placeholder is replaced, and stop with the Vault message until then. Discovery runs on this machine
(local connection) with an nvidia-smi that prints the real capture of tests/fixtures/nvidia-smi.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from example_inventory import clean_env, copy_with_key, fake_nvidia_smi

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXAMPLE = ROOT / "inventories" / "example"
CAPTURE = ROOT / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"


def playbook(*argv):
    return subprocess.run([str(BIN / "ansible-playbook"), *argv], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, check=False)


def test_the_example_passes_the_controller_preflight(tmp_path):
    inventory = tmp_path / "myserver"
    password = copy_with_key(EXAMPLE, inventory, BIN)
    proc = playbook("playbooks/preflight.yml", "-i", str(inventory), "--vault-password-file", str(password),
                    "-e", "volta_preflight_detect=false", "-e", f"volta_plan_dump={tmp_path / 'plans'}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpu01: 1 instance(s) planned, running volta-chat.service, gateway ports [8001]" in proc.stdout
    plan = json.loads((tmp_path / "plans" / "gpu01.json").read_text())
    [inst] = plan["instances"]
    assert inst["argv"][2] == "/srv/volta/models/qwen2.5-7b-instruct@a09a35458c702b33eeacc393d103063234e8bc28"
    assert "--tensor-parallel-size" in inst["argv"]


def test_the_example_as_shipped_stops_at_its_placeholder_key():
    proc = playbook("playbooks/preflight.yml", "-i", str(EXAMPLE), "-e", "volta_preflight_detect=false")
    assert proc.returncode != 0
    said = " ".join(proc.stdout.split())
    assert "gpu01: the inventory holds Ansible Vault-encrypted values" in said
    assert "cannot be decrypted" in said


def test_the_example_with_a_plain_key_passes():
    proc = playbook("playbooks/preflight.yml", "-i", str(EXAMPLE), "-e", "volta_preflight_detect=false",
                    "-e", '{"api_gateway_keys": {"chat": "k3y-given-plainly-for-a-test-0123456789"}}')
    assert proc.returncode == 0, proc.stdout + proc.stderr


def load(*parts):
    return yaml.safe_load(EXAMPLE.joinpath(*parts).read_text())


def test_the_example_describes_one_pcie_box_with_a_pinned_model():
    host = load("host_vars", "gpu01.yml")
    assert host["volta_server"]["gpu_model"].startswith("Tesla V100-PCIE-")
    assert host["volta_server"]["nvlink_islands"] == []
    [inst] = host["volta_instances"]
    group = load("group_vars", "volta", "main.yml")
    source = group["volta_models"][inst["model_source"]]["hf"]
    assert len(source["revision"]) == 40
    assert group["firewall_ssh_cidrs"] and group["firewall_api_cidrs"]


def test_discover_prints_the_block_of_the_capture_and_changes_nothing(tmp_path):
    smi = fake_nvidia_smi(tmp_path, CAPTURE)
    proc = playbook("playbooks/discover.yml", "-i", "gpu01,", "-c", "local", "--check",
                    "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"volta_discover_nvidia_smi={smi}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok=3    changed=0    unreachable=0    failed=0" in proc.stdout
    for line in ("# gpu01: read by volta.serving.discover; paste into host_vars/gpu01.yml",
                 "# memory per GPU (nvidia-smi memory.total): 140.4 GiB (143771 MiB)",
                 "volta_server:", "gpu_model: NVIDIA H200", "gpu_count: 2", 'compute_capability: "9.0"',
                 "nvlink_islands: [[0, 1]]", "ram_gb: "):
        assert line in proc.stdout, proc.stdout


def test_discover_on_an_inventory_host_says_what_differs(tmp_path):
    smi = fake_nvidia_smi(tmp_path, CAPTURE)
    proc = playbook("playbooks/discover.yml", "-i", str(EXAMPLE), "--check", "-e", "ansible_connection=local",
                    "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"volta_discover_nvidia_smi={smi}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = " ".join(proc.stdout.replace("#   ", "").split())
    assert ("# the inventory's volta_server differs: gpu_model 'Tesla V100-PCIE-16GB' (inventory) against "
            "'NVIDIA H200' (read); gpu_count 4 (inventory) against 2 (read);") in said, proc.stdout
