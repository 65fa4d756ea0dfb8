# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.api_keys in a real ansible-playbook (local connection): it reads api_gateway's key settings from
the host's variables, hides its own result, and shows its refusal, which names instances and never a key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
KEY = "api-keys-action-test-key-0123456789abcdef"
SECRETS = "/etc/volta/secrets"


def inst(name, key_name=None):
    return {"name": name, "key_name": key_name or name, "key_owner": name,
            "environment_file": f"{SECRETS}/{name}.env", "api_key_env": "VLLM_API_KEY", "api_key_file": "",
            "secret_env_names": ["HF_TOKEN"] if name == "chat" else []}


def run(tmp_path, variables, instances):
    out = tmp_path / "result.json"
    play = [{"hosts": "localhost", "gather_facts": False, "vars": variables, "tasks": [
        {"name": "Resolve", "volta.serving.api_keys": {"instances": instances, "secrets_dir": SECRETS,
                                                       "service_group": "volta"},
         "register": "__resolved", "ignore_errors": True},
        {"name": "Write the result", "ansible.builtin.copy": {"dest": str(out),
                                                              "content": "{{ __resolved | to_json }}"}},
    ]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), str(playbook), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text()), proc.stdout


def test_the_keys_and_files_come_from_the_host_variables_and_are_never_shown(tmp_path):
    variables = {"api_gateway_keys": {"chat": KEY}, "api_gateway_key_group": "",
                 "volta_instances": [{"name": "chat", "secret_env": {"HF_TOKEN": "hf-secret"}}]}
    result, stdout = run(tmp_path, variables, [inst("chat")])
    assert result["keys"] == {"chat": KEY}
    assert result["group"] == "volta"
    assert result["to_generate"] == []
    assert result["files"] == [{"path": f"{SECRETS}/chat.env", "owner": "root", "group": "root", "mode": "0600",
                                "secret": True, "content": f'HF_TOKEN="hf-secret"\nVLLM_API_KEY="{KEY}"\n'}]
    assert KEY not in stdout and "hf-secret" not in stdout


def test_a_key_to_generate_is_named_before_the_keys_are_resolved(tmp_path):
    result = run(tmp_path, {"api_gateway_generate_keys": True, "api_gateway_key_group": "keys"}, [inst("chat")])[0]
    assert (result["to_generate"], result["keys"], result["group"]) == (["chat"], {}, "keys")
    assert not result.get("failed")


def test_an_instance_without_a_usable_key_is_refused_by_name(tmp_path):
    result, stdout = run(tmp_path, {"api_gateway_keys": {"chat": KEY, "short": "abc"}}, [inst("chat"), inst("short")])
    assert result["failed"] is True
    assert result["msg"].startswith("localhost: instance(s) short: field api_gateway_keys: no key")
    assert "abc" not in result["msg"] and KEY not in stdout
