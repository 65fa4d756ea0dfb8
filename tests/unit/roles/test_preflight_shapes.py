# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/preflight.yml on the controller (volta_preflight_detect=false) with variables of the wrong type.

Before: ``volta_instances: "chat"``, ``volta_server: []`` and an instance that is a string stopped on
Ansible's argument-spec check, which prints the whole spec and names no host; ``api_gateway_keys`` as a
list failed with "dict2items requires a dictionary"; ``gpu_count: -1`` reported "GPU 0 does not exist ...
(indexes 0--2)". Now each host gets one line: host, variable, expected, given.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/x", "gpus": [0], "port": 8001}
KEYS = {"chat": "shapes-test-key-not-a-secret-0123456789"}
HOSTS = {
    "str-instances": {"volta_server": SERVER, "volta_instances": "chat", "api_gateway_keys": KEYS},
    "list-server": {"volta_server": [], "volta_instances": [CHAT], "api_gateway_keys": KEYS},
    "str-instance": {"volta_server": SERVER, "volta_instances": [CHAT, "chat2"], "api_gateway_keys": KEYS},
    "list-keys": {"volta_server": SERVER, "volta_instances": [CHAT], "api_gateway_keys": ["chat"]},
    "neg-count": {"volta_server": {**SERVER, "gpu_count": -1}, "volta_instances": [CHAT], "api_gateway_keys": KEYS},
}
EXPECTED = {
    "str-instances": "str-instances: volta_instances: expected a list of instances (mappings with name, engine, "
    "model, gpus, port), got the string 'chat'. Fix:",
    "list-server": "list-server: volta_server: expected a mapping (gpu_model, gpu_count, compute_capability, "
    "nvlink_islands, ram_gb), got a list of 0 items. Fix:",
    "str-instance": "str-instance: volta_instances[1]: expected an instance (a mapping with name, engine, model, "
    "gpus, port), got the string 'chat2'. Fix:",
    "list-keys": "list-keys: api_gateway_keys: expected a mapping of instance name -> API key, got a list of 1 item.",
    "neg-count": "neg-count: volta_server.gpu_count: expected a whole number of GPUs, at least 1, got the number -1.",
}


def test_wrong_types_fail_preflight_with_one_line_each(tmp_path):
    inventory = tmp_path / "hosts.yml"
    hosts = {name: {**variables, "ansible_connection": "local"} for name, variables in HOSTS.items()}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}  # fmt: skip
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "preflight.yml"), "-i", str(inventory),
               "-e", "volta_preflight_detect=false"]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    flat = " ".join(out.split())
    for host, message in EXPECTED.items():
        assert message in flat, (host, out[-4000:])
        assert re.search(rf"{host}\s*: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", out), (host, out[-2000:])
    # No argument-spec dump, no filter error from inside a template, no nonsense GPU range.
    for text in ("Validation of arguments failed", "argument_spec", "dict2items", "indexes 0--2", "add None"):
        assert text not in out, text
    assert KEYS["chat"] not in out
