"""The built collection: what the artifact holds, and that an installed copy works.

Builds the collection with ansible-galaxy, installs the artifact into a temporary
collections path, and runs volta.serving.preflight from another directory against a
throwaway inventory and against a copy of the shipped example inventory (controller only, no
host contacted), and volta.serving.discover on this machine.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from example_inventory import copy_with_key, fake_nvidia_smi

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
      firewall_ssh_cidrs: [10.0.0.0/8]
      firewall_api_cidrs: [10.0.0.0/8]
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


def test_artifact_has_no_tests_lab_or_lab_inventories(artifact):
    with tarfile.open(artifact) as tar:
        names = tar.getnames()
    tops = {n.split("/", 1)[0] for n in names}
    for unwanted in ("tests", "molecule", "collections", "bench", ".ci", ".config", "Makefile"):
        assert unwanted not in tops, f"{unwanted} is in the artifact"
    for wanted in ("roles", "plugins", "playbooks", "meta", "MANIFEST.json", "README.md", "inventories"):
        assert wanted in tops, f"{wanted} is missing from the artifact"
    assert "plugins/modules/gpu_facts.py" in names
    assert "playbooks/discover.yml" in names
    inventories = {n.split("/")[1] for n in names if n.startswith("inventories/") and n.count("/") >= 1}
    # The examples an operator copies (one server; one instance over two; a monitoring host); never the lab's.
    assert inventories == {"example", "example-cluster", "example-monitoring"}, inventories


EXAMPLE_FILES = ("hosts.yml", "host_vars/gpu01.yml", "group_vars/volta/main.yml", "group_vars/volta/vault.yml")


def test_artifact_holds_the_example_inventory(artifact):
    with tarfile.open(artifact) as tar:
        names = set(tar.getnames())
        for name in EXAMPLE_FILES:
            assert f"inventories/example/{name}" in names
            shipped = tar.extractfile(f"inventories/example/{name}").read()
            assert shipped == (ROOT / "inventories" / "example" / name).read_bytes(), name


# [text](target) and [label]: target; the target up to a space, a ')' or a '#'. A path in a code
# span that starts with ../ is a reference to a file as well.
LINK_RE = re.compile(r"\]\(\s*<?([^)\s>#]+)[^)]*\)|^\s*\[[^\]]+\]:\s*<?([^\s>#]+)|`(\.\./[^`\s]+)`", re.M)
EXTERNAL_RE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def shipped_links(artifact):
    """``(markdown file, link target)`` for every relative link of every .md file in the artifact."""
    with tarfile.open(artifact) as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.endswith(".md")):
                continue
            text = tar.extractfile(member).read().decode()
            text = re.sub(r"```.*?```", "", text, flags=re.S)  # code blocks hold no links
            for match in LINK_RE.finditer(text):
                target = match.group(1) or match.group(2) or match.group(3)
                if not EXTERNAL_RE.match(target):
                    yield member.name, target


def test_no_shipped_link_points_outside_the_repository(artifact):
    outside = []
    for name, target in shipped_links(artifact):
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            outside.append(f"{name}: {target}")
        elif not (ROOT / resolved).exists():
            outside.append(f"{name}: {target} (no such file in the repository)")
    assert outside == []


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


def install(artifact, tmp_path):
    colls = tmp_path / "collections"
    proc = run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(colls), str(artifact)],
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return colls, colls / "ansible_collections" / "volta" / "serving"


def test_installed_example_inventory_copied_passes_preflight(artifact, tmp_path):
    colls, installed = install(artifact, tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    password = copy_with_key(installed / "inventories" / "example", work / "myserver", BIN)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(colls), "ANSIBLE_INJECT_FACT_VARS": "false"}
    proc = run([str(BIN / "ansible-playbook"), "volta.serving.preflight", "-i", "myserver",
                "--vault-password-file", str(password), "-e", "volta_preflight_detect=false"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpu01: 1 instance(s) planned, running volta-chat.service" in proc.stdout


def test_installed_discover_runs_read_only(artifact, tmp_path):
    colls, _installed = install(artifact, tmp_path)
    capture = ROOT / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"
    smi = fake_nvidia_smi(tmp_path, capture)
    env = {"ANSIBLE_COLLECTIONS_PATH": str(colls), "ANSIBLE_CALLBACK_RESULT_FORMAT": "yaml"}
    proc = run([str(BIN / "ansible-playbook"), "volta.serving.discover", "-i", "gpu01,", "-c", "local", "--check",
                "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"volta_discover_nvidia_smi={smi}"],
               cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "changed=0" in proc.stdout
    assert "        volta_server:\n          gpu_model: NVIDIA H200  # " in proc.stdout
