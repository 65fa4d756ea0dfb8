# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pin checks of roles/engine/tasks/plan.yml run by ansible-playbook on localhost (connection local).

The index is a file:// PEP 503 index written here with PEP 658 metadata files; the requirement
lines are vLLM 0.19.1's and 1Cat-vLLM's real torch pins (facts section 3). Nothing is installed:
plan.yml reads metadata and refuses, or passes (the vLLM wheel plan is given: the index's wheel).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
VLLM_0191 = ["torch==2.10.0", "torchaudio==2.10.0", "torchvision==0.25.0"]

PLAYBOOK = """
- name: Run plan.yml
  hosts: all
  connection: local
  gather_facts: false
  tasks:
    # What preflight.yml would have chosen (a role var); a fact outranks it.
    - name: Set the interpreter of the case
      ansible.builtin.set_fact:
        __engine_pythons: "{{ pythons }}"
      when: pythons is defined

    - name: Include plan.yml of volta.serving.engine
      ansible.builtin.include_role:
        name: volta.serving.engine
        tasks_from: plan.yml
      vars:
        __engine_flavour: "{{ flavour }}"
        __engine_spec: "{{ __engine_specs[flavour] }}"
        __engine_build: {key: test, method: wheel, why: the test}
"""


def wheel(path, name, version, requires, requires_python=None):
    meta = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
                   + ([f"Requires-Python: {requires_python}\n"] if requires_python else [])
                   + [f"Requires-Dist: {r}\n" for r in requires])
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}-{version}.dist-info/METADATA", meta)
    return path, meta.encode()


def index(root, releases):
    """A file:// PEP 503 index of (name, version, requires) wheels with PEP 658 metadata files."""
    files = root / "packages"
    files.mkdir(parents=True, exist_ok=True)
    pages = {}
    for name, version, requires, *requires_python in releases:
        path, meta = wheel(files / f"{name}-{version}-cp38-abi3-manylinux_2_31_x86_64.whl", name, version, requires,
                           *requires_python)
        (files / (path.name + ".metadata")).write_bytes(meta)
        digest = hashlib.sha256(meta).hexdigest()
        pages.setdefault(name, []).append(
            f'<a href="../../packages/{path.name}" data-core-metadata="sha256={digest}">{path.name}</a>')
    for name, links in pages.items():
        (root / "simple" / name).mkdir(parents=True)
        (root / "simple" / name / "index.html").write_text("\n".join(links))
    return (root / "simple").as_uri()


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One ansible-playbook run; each host is one case. Returns (recap line per host, whole output)."""
    tmp = tmp_path_factory.mktemp("pins")
    # 0.40.0: a release the Python record does not know, whose metadata says Requires-Python >=3.12.
    url = index(tmp / "idx", [("vllm", "0.19.1", VLLM_0191), ("vllm", "0.33.0", ["torch==2.14.0"]),
                              ("vllm", "0.40.0", ["torch==2.11.0"], ">=3.12")])
    newer = {"flavour": "vllm", "engine_vllm_version": "0.40.0", "engine_vllm_torch_version": "2.11.0",
             "ansible_facts": {"distribution": "Debian", "distribution_version": "12.8"}}
    onecat, _meta = wheel(tmp / "1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl", "1cat_vllm", "1.5.1",
                          ["torch==2.10.0", "torchvision==0.25.0"])
    onecat_vars = {"flavour": "onecat", "engine_onecat_wheel_url": str(onecat),
                   "engine_onecat_sha256": hashlib.sha256(onecat.read_bytes()).hexdigest()}
    hosts = {
        "vllm-mismatch": {"flavour": "vllm", "engine_vllm_version": "0.19.1", "engine_vllm_torch_version": "2.11.0",
                          "engine_vllm_torch_cuda": "cu126"},
        "vllm-match": {"flavour": "vllm", "engine_vllm_version": "0.19.1", "engine_vllm_torch_version": "2.10.0",
                       "engine_vllm_torch_extras": ["torchvision", "torchaudio"]},
        "vllm-no-torchaudio": {"flavour": "vllm", "engine_vllm_version": "0.33.0",
                               "engine_vllm_torch_version": "2.14.0",
                               "engine_vllm_torch_extras": ["torchvision", "torchaudio"]},
        "onecat-match": {**onecat_vars, "engine_onecat_torch_version": "2.10.0"},
        # What preflight.yml chose (the engine_python_choice filter) before the metadata was read.
        "python-excluded": {**newer, "pythons": {"vllm": {"request": "python3.11", "version": "3.11"}}},
        "python-within": {**newer, "pythons": {"vllm": {"request": "cpython-3.12.16", "version": "3.12.16"}}},
        "onecat-mismatch": {**onecat_vars, "engine_onecat_torch_version": "2.11.0"},
    }
    for name, hostvars in hosts.items():
        hostvars.update(engine_pypi_index_url=url, engine_cache_dir=str(tmp / name / "cache"),
                        ansible_python_interpreter=str(REPO / ".venv" / "bin" / "python"))
        (tmp / name / "cache" / "downloads").mkdir(parents=True)
    (tmp / "inventory.json").write_text(json.dumps({"all": {"hosts": hosts}}))
    (tmp / "play.yml").write_text(PLAYBOOK)
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp / "tmp"), "ANSIBLE_ASYNC_DIR": str(tmp / "async")}
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "inventory.json"), str(tmp / "play.yml")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    recap = {line.split()[0]: line for line in out.splitlines() if " : ok=" in line}
    assert set(recap) == set(hosts), out[-3000:]
    return recap, " ".join(out.split())


def failed(recap, host):
    return "failed=0" not in recap[host]


def test_vllm_torch_mismatch_is_refused_before_download(ran):
    recap, out = ran
    assert failed(recap, "vllm-mismatch")
    assert "vllm-mismatch: vllm 0.19.1 requires torch==2.10.0 but engine_vllm_torch_version is 2.11.0. Why: " in out
    assert ("Fix: set engine_vllm_torch_version: 2.10.0 with a CUDA tag that keeps sm_70 (engine_vllm_torch_cuda: "
            "cu126 or cu128), or pin a vllm release that requires torch 2.11.0." in out)


def test_vllm_matching_pin_and_companions_pass(ran):
    recap, _out = ran
    assert not failed(recap, "vllm-match"), recap["vllm-match"]


def test_companion_without_a_recorded_release_is_refused(ran):
    recap, out = ran
    assert failed(recap, "vllm-no-torchaudio")
    assert ("vllm-no-torchaudio: engine_vllm_torch_extras asks for torchaudio, which has no recorded release for "
            "torch 2.14.0." in out)
    assert "or use a torch release that has it: 2.9.0, 2.9.1, 2.10.0, 2.11.0." in out


def test_onecat_wheel_file(ran):
    recap, out = ran
    assert not failed(recap, "onecat-match"), recap["onecat-match"]
    assert failed(recap, "onecat-mismatch")
    assert "onecat-mismatch: 1cat_vllm 1.5.1 requires torch==2.10.0 but engine_onecat_torch_version is 2.11.0." in out


def test_requires_python_from_the_metadata_refuses_the_chosen_interpreter(ran):
    recap, out = ran
    assert failed(recap, "python-excluded")
    assert ("python-excluded: engine_python (auto) is python3.11 (Python 3.11), which vLLM 0.40.0 does not support "
            "(vLLM 0.40.0: >=3.12 (its metadata); torch 2.11.0: >=3.10). Fix: leave engine_python empty" in out)
    assert not failed(recap, "python-within"), recap["python-within"]
