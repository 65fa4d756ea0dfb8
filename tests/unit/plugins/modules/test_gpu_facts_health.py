# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the health section of volta.serving.gpu_facts: main() end to end with the lab's stand-in."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import gpu_facts
from gpu_sim_root import SIMULATOR, write_sim_root


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gpu_facts.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.setenv("VOLTA_GPU_SIM_ROOT", str(root))
    monkeypatch.delenv("VOLTA_GPU_SIM_PROFILE", raising=False)

    def setup(profile, faults=None):
        write_sim_root(root, profile, faults or {})
        return {"nvidia_smi": str(SIMULATOR), "proc_version_path": str(root / "var/lib/volta-lab/driver/version"),
                "sysfs_root": str(root / "var/lib/volta-lab/gpu-sim/sys")}

    return setup


def test_healthy_lab_host_has_no_problems(capsys, lab):
    rc, result = run_module(capsys, lab("v100-sxm2-10"))
    assert rc == 0
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "ok" and facts["gpu_count"] == 10
    health = facts["health"]
    assert health["status"] == "ok" and health["problems"] == []
    assert [g["index"] for g in health["gpus"]] == list(range(10))
    assert health["gpus"][8]["pci_address"] == "0000:af:00.0"


def test_missing_gpu_is_named_by_its_sysfs_address(capsys, lab):
    rc, result = run_module(capsys, lab("v100-pcie-8", {"00000000:88:00.0": {"missing": True}}))
    assert rc == 0
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["gpu_count"] == 7
    assert facts["health"]["missing"] == ["0000:88:00.0"]
    assert facts["health"]["problems"][0]["kind"] == "missing"


def test_nvidia_smi_without_xml_leaves_health_unknown(capsys, lab, tmp_path):
    args = lab("v100-pcie-8")
    wrapper = tmp_path / "old-smi"
    # An nvidia-smi that answers everything but -x (refused as an unknown option).
    wrapper.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = -x ] && exit 255; done\nexec "{SIMULATOR}" "$@"\n')
    wrapper.chmod(0o755)
    rc, result = run_module(capsys, {**args, "nvidia_smi": str(wrapper)})
    assert rc == 0
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "ok" and facts["gpu_count"] == 8
    assert facts["health"]["status"] == "unknown"
    assert "rc=255" in facts["health"]["message"]
    assert len(facts["health"]["pci_functions"]) == 8


def test_no_driver_reads_no_xml(capsys, tmp_path):
    rc, result = run_module(capsys, {"nvidia_smi": str(tmp_path / "absent"),
                                     "proc_version_path": str(tmp_path / "none"), "sysfs_root": str(tmp_path)})
    assert rc == 0
    health = result["ansible_facts"]["volta_gpu"]["health"]
    assert health["status"] == "unknown" and health["message"].startswith("not read:")
    assert health["pci_functions"] is None


def _no_xml_smi(tmp_path):
    """The simulator behind a wrapper that refuses -x: a health read through it can only come back unknown."""
    wrapper = tmp_path / "no-xml-smi"
    wrapper.write_text(f'#!/bin/sh\nfor a in "$@"; do [ "$a" = -x ] && exit 255; done\nexec "{SIMULATOR}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_known_health_of_the_same_gpus_is_kept_without_reading_again(capsys, lab, tmp_path):
    args = lab("v100-pcie-8", {"00000000:1B:00.0": {"ecc_volatile_uncorrectable": 2}})
    _rc, first = run_module(capsys, args)
    known = first["ansible_facts"]["volta_gpu"]["health"]
    assert known["status"] == "ok" and known["problems"][0]["kind"] == "ecc-uncorrectable"
    _rc, second = run_module(capsys, {**args, "nvidia_smi": _no_xml_smi(tmp_path), "known_health": known})
    assert second["ansible_facts"]["volta_gpu"]["health"] == known


def test_known_health_is_read_again_when_a_gpu_was_lost_since(capsys, lab):
    args = lab("v100-pcie-8")
    _rc, first = run_module(capsys, args)
    known = first["ansible_facts"]["volta_gpu"]["health"]
    args = lab("v100-pcie-8", {"00000000:88:00.0": {"missing": True}})
    _rc, second = run_module(capsys, {**args, "known_health": known})
    health = second["ansible_facts"]["volta_gpu"]["health"]
    assert health["missing"] == ["0000:88:00.0"]
    assert health["problems"][0]["kind"] == "missing"


def test_known_health_that_was_unknown_is_read_again(capsys, lab):
    args = lab("v100-pcie-8")
    known = {"status": "unknown", "message": "not read: nvidia-smi was not found", "gpus": [],
             "pci_functions": None, "missing": [], "problems": []}
    _rc, result = run_module(capsys, {**args, "known_health": known})
    health = result["ansible_facts"]["volta_gpu"]["health"]
    assert health["status"] == "ok" and health["message"] == "8 GPU(s) read, 0 problem(s)"
