# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on the controller (volta_preflight_detect=false): mistakes stop the whole run in preflight.

Each host of one inventory makes one mistake that the controller can see; one host makes none. The run
must stop in the preflight play, before the settings and driver plays, on every host, each mistake named
with host, variable or field, why and fix; the failure lists the errors, not the plan. A second run
without the Vault password gives every host the same message, never Ansible's template error. No test
here reaches the network: the index is a closed local port and the models are files under tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
KEY = "controller-test-key-not-a-secret-0123456789"
# Port 9 (discard) on the loopback: the index read fails at once, as from a controller without access.
COMMON = {"ansible_connection": "local", "firewall_api_cidrs": ["10.0.0.0/8"], "firewall_ssh_cidrs": ["10.0.0.0/8"],
          "engine_pypi_index_url": "http://127.0.0.1:9/simple"}  # fmt: skip


def chat(**changes):
    return {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "gpus": [0], "port": 8001, **changes}


def host(instances=None, **variables):
    return {**COMMON, "volta_server": SERVER, "volta_instances": instances or [chat()],
            "api_gateway_keys": {"chat": KEY}, **variables}  # fmt: skip


def write_model(root):
    """A Qwen 2.5 72B-shaped checkpoint on the controller: 64 heads, 8 KV heads, 135 GiB of weights."""
    root.mkdir()
    config = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_attention_heads": 64,
              "num_key_value_heads": 8, "hidden_size": 8192, "num_hidden_layers": 80, "torch_dtype": "bfloat16",
              "max_position_embeddings": 32768}  # fmt: skip
    (root / "config.json").write_text(json.dumps(config))
    (root / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 145_412_407_296}}))
    return str(root)


def hosts(model):
    no_cidrs = {k: v for k, v in host().items() if k != "firewall_api_cidrs"}
    return {
        "good": host(),
        "driver": host(nvidia_driver_version="590.44.01"),
        "typo": {**no_cidrs, "firewall_api_cidr": ["10.0.0.0/8"]},
        "field": host([chat(max_model_lenght=8192)]),
        "islands": host(volta_server={**SERVER, "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 8]]}),
        "engine": host(engine_vllm_version="latest"),
        "pins": host([{k: v for k, v in chat(model_source="qwen").items() if k != "model"}],
                     engine_llamacpp_source_sha256="a" * 64, model_hf_endpoint="http://127.0.0.1:9",
                     volta_models={"qwen": {"hf": {"repo": "Qwen/Qwen2.5-72B-Instruct", "revision": "1" * 40}}}),
        "model": host([chat(model=model, gpus=[0, 1, 2], tensor_parallel=3)]),
        # Two replicas of one service whose context lengths differ.
        "replicas": host([chat(served_model_name="lab-chat", service_port=8000, max_model_len=8192),
                          chat(name="chat-b", served_model_name="lab-chat", gpus=[1], port=8002, service_port=8000,
                               max_model_len=4096)], api_gateway_keys={"lab-chat": KEY}),
    }


EXPECTED = {
    "driver": ["driver: host-wide: field nvidia_driver_version: nvidia_driver_version 590.44.01 is not a version "
               "of driver branch 580", "Fix: set nvidia_driver_version to \"\""],
    "typo": ["typo: host-wide: field firewall_api_cidr: firewall_api_cidr is not a variable of any volta.serving "
             "role", "Fix: did you mean firewall_api_cidrs?",
             "typo: host-wide: field firewall_api_cidrs: firewall_api_cidrs is empty while the host serves 1 "
             "instance(s) (chat)", "reachable by no one"],
    "field": ["field: instance chat: field max_model_lenght: max_model_lenght is not a field volta.serving reads",
              "Fix: did you mean max_model_len?"],
    "islands": ["islands: host-wide: field volta_server.nvlink_islands: nvlink_islands[1] [4, 5, 6, 8] names GPU 8, "
                "but the host has 8 GPUs (indexes 0-7)."],
    "engine": ["engine: host-wide: field engine_vllm_version: engine_vllm_version 'latest' is not a release version"],
    "pins": ["pins: host-wide: field engine_llamacpp_source_sha256: engine_llamacpp_source_sha256 'aaaaaaaaaaaa...' "
             "is not a sha256", "pins: host-wide: field volta_models.qwen.hf.revision: volta_models.qwen.hf.revision "
             "'111111111111...' is not a commit id",
             # The hub, closed here, is read from the controller: the summary says the model rules did not run.
             "for instance chat: the hub could not be read from the controller"],
    "model": ["model: instance chat: field tensor_parallel: tensor_parallel 3 does not divide the 64 attention heads",
              "model: instance chat: field gpus: "],
    "replicas": ["replicas: instance chat-b: field max_model_len: chat-b and chat both serve lab-chat, but their "
                 "max_model_len differ (4096 and 8192).", "Fix: give both the same max_model_len"],
}


def run_site(tmp_path, inventory, *extra):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}  # fmt: skip
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "site.yml"), "-i", str(inventory),
               "-e", "volta_preflight_detect=false", *extra]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def mistakes(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("mistakes")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts(write_model(tmp_path / "qwen72b"))}}))
    return run_site(tmp_path, inventory)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_mistake_is_named_in_preflight(mistakes, name):
    rc, out = mistakes
    flat = " ".join(out.split())
    assert rc != 0
    for text in EXPECTED[name]:
        assert text in flat, (name, text, out[-6000:])


def test_one_host_stops_every_host_before_any_change(mistakes):
    out = mistakes[1]
    # The settings play and the host layer never start, not even for the host without a mistake.
    for play in ("PLAY [Check every layer's settings", "PLAY [Driver and CUDA toolkit]", "PLAY [Engine"):
        assert play not in out, out[-3000:]
    assert "good: " not in " ".join(line for line in out.splitlines() if "error(s) in the serving plan" in line)


def test_a_plan_error_prints_the_errors_not_the_plan(mistakes):
    out = mistakes[1]
    assert "error(s) in the serving plan" in out
    for text in ("volta_serving_plan", "unit_sandbox", '"argv"', "argv:"):
        assert text not in out, text


def test_the_model_rules_run_from_the_controller_and_the_summary_lists_what_did_not(mistakes):
    out = mistakes[1]
    flat = " ".join(out.split())
    assert "Total number of attention heads (64) must be divisible by tensor parallel size (3)." in flat
    assert ("not run (2): model rules (model-missing, tp-heads, max-model-len, weights-fit, ...) for instance chat: "
            "not on the controller, and the host was not read (volta_preflight_detect=false); "
            "gpu-facts-mismatch") in flat


VAULTED = """\
all:
  vars:
    ansible_connection: local
    firewall_api_cidrs: [10.0.0.0/8]
    volta_server: {gpu_model: Tesla V100-PCIE-32GB, gpu_count: 8, compute_capability: "7.0", nvlink_islands: []}
    volta_instances: [{name: chat, engine: vllm, model: /srv/models/chat, gpus: [0], port: 8001}]
    api_gateway_keys:
      chat: !vault |
        $ANSIBLE_VAULT;1.1;AES256
        62313365396662343061393464336163383764373764613633653363666661353765383734336332
        6466316637323638383861346236656237346539373630610a663936613039366336643732396535
        37626162316562613564366330303465643962353731373938393537323330636637346331303436
        3033613430303439620a383039393763643866393364653835353338376163393239356533303530
        3864
  hosts:
    first: {}
    second: {}
"""


def test_without_the_vault_password_every_host_gets_the_same_message(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(VAULTED)
    rc, out = run_site(tmp_path, inventory)
    flat = " ".join(out.split())
    assert rc != 0
    for name in ("first", "second"):
        assert (f"{name}: the inventory holds Ansible Vault-encrypted values that cannot be decrypted "
                "(api_gateway_keys[chat]). Why: no Vault password, or a wrong one, was given") in flat, out[-3000:]
        assert "Fix: rerun with --vault-password-file FILE or --ask-vault-pass" in flat
    assert "undecryptable variable" not in out
    assert "PLAY [Check every layer's settings" not in out
