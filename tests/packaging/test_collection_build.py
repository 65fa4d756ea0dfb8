"""The built collection: what the artifact holds, and that an installed copy works.

Builds the collection with ansible-galaxy, installs the artifact into a temporary
collections path, and runs volta.serving.preflight from another directory against a
throwaway inventory (controller only, no host contacted).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

INVENTORY = """\
all:
  hosts:
    v100-box:
      ansible_host: 192.0.2.10
      ansible_connection: ssh
      volta_server:
        gpu_model: Tesla V100-SXM2-32GB
        gpu_count: 4
        compute_capability: "7.0"
        nvlink_islands: [[0, 1, 2, 3]]
        ram_gb: 256
      volta_instances:
        - name: command-r
          engine: vllm
          model: /srv/models/command-r-32b
          model_family: dense
          gpus: [0, 1, 2, 3]
          tensor_parallel: 4
          port: 8001
      api_gateway_generate_keys: true
"""


def run(argv, cwd, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    full_env.update(env or {})
    return subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("build")
    proc = run([str(BIN / "ansible-galaxy"), "collection", "build", "--force", "--output-path", str(out), str(ROOT)],
               cwd=out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tarballs = list(out.glob("volta-serving-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    return tarballs[0]


def test_artifact_has_no_tests_lab_or_inventories(artifact):
    with tarfile.open(artifact) as tar:
        names = tar.getnames()
    tops = {n.split("/", 1)[0] for n in names}
    for unwanted in ("tests", "molecule", "inventories", "collections", "bench", ".ci", ".config", "Makefile"):
        assert unwanted not in tops, f"{unwanted} is in the artifact"
    for wanted in ("roles", "plugins", "playbooks", "meta", "MANIFEST.json", "README.md"):
        assert wanted in tops, f"{wanted} is missing from the artifact"
    assert "plugins/modules/gpu_facts.py" in names


def test_role_defaults_never_point_at_the_lab(artifact):
    with tarfile.open(artifact) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if member.isfile() and parts[0] == "roles" and len(parts) > 2 and parts[2] in ("defaults", "vars"):
                text = tar.extractfile(member).read().decode()
                for word in ("volta-lab", "stand-in", "tests/lab"):
                    assert word not in text, f"{member.name} mentions {word}"


def test_installed_artifact_runs_preflight_from_another_directory(artifact, tmp_path):
    colls = tmp_path / "collections"
    proc = run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(colls), str(artifact)],
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (colls / "ansible_collections" / "volta" / "serving" / "roles" / "preflight").is_dir()

    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "hosts.yml").write_text(INVENTORY)
    dump = work / "plans"
    env = {
        "ANSIBLE_COLLECTIONS_PATH": str(colls),
        "ANSIBLE_INJECT_FACT_VARS": "false",
        "ANSIBLE_HOST_KEY_CHECKING": "false",
    }
    proc = run([str(BIN / "ansible-playbook"), "volta.serving.preflight", "-i", "hosts.yml",
                "-e", "volta_preflight_detect=false", "-e", f"volta_plan_dump={dump}"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "unreachable=0" in proc.stdout
    plan = json.loads((dump / "v100-box.json").read_text())
    [inst] = plan["instances"]
    assert inst["unit"] == "volta-command-r.service"
    assert inst["argv"][1:3] == ["serve", "/srv/models/command-r-32b"]


def test_installed_artifact_preflight_reports_errors(artifact, tmp_path):
    colls = tmp_path / "collections"
    run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(colls), str(artifact)],
        cwd=tmp_path)
    bad = INVENTORY.replace("dense", "dense\n          dtype: bfloat16")
    (tmp_path / "hosts.yml").write_text(bad)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(colls), "ANSIBLE_INJECT_FACT_VARS": "false"}
    proc = run([str(BIN / "ansible-playbook"), "volta.serving.preflight", "-i", "hosts.yml",
                "-e", "volta_preflight_detect=false"], cwd=tmp_path, env=env)
    assert proc.returncode != 0
    assert "v100-box" in proc.stdout
    assert "bfloat16" in proc.stdout
