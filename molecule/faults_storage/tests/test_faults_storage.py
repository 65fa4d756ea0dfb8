"""Verify the host after the faults and the reruns (side_effect.yml): nothing the faults did is left.

Expected values come from the scenario (molecule.yml: the second revision; side_effect.yml: the new engine
pins), not from the roles.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
VARS = SCENARIO["provisioner"]["inventory"]["group_vars"]["all"]
R1, R2 = VARS["__lab_r1"], VARS["__lab_r2"]
MODELS = "/srv/volta/models"
NEW = "vllm-0.19.1-torch2.10.0-cu128"
testinfra_hosts = ["ansible://faults-storage"]


def test_current_is_the_new_install_and_it_is_finished(host):
    link = host.file("/opt/volta/engines/vllm/current")
    assert link.is_symlink and link.linked_to == f"/opt/volta/engines/vllm/{NEW}"
    record = json.loads(host.file(f"/opt/volta/engines/vllm/{NEW}/.volta-install.json").content_string)
    assert record["version"] == "0.19.1" and record["name"] == NEW


def test_the_instance_serves_the_new_revision_on_the_new_engine(host):
    assert host.service("volta-chat.service").is_running
    ask = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:18001/version').read().decode())"
    version = host.run(f'python3 -c "{ask}"')
    assert version.rc == 0 and json.loads(version.stdout)["version"] == "0.19.1"
    pid = host.check_output("systemctl show -p MainPID --value volta-chat.service")
    argv = host.file(f"/proc/{pid}/cmdline").content_string.split("\0")
    assert f"{MODELS}/tiny@{R2}" in argv


def test_both_revisions_are_complete_and_no_partial_file_is_left(host):
    for revision in (R1, R2):
        assert host.file(f"{MODELS}/tiny@{revision}/.volta-model.json").exists
    assert host.check_output(f"find {MODELS} /opt/volta -name '*.incomplete' -o -name 'lab-filler*'") == ""


def test_the_index_is_reachable_again(host):
    assert "lab_index_cut" not in host.check_output("nft list tables")
