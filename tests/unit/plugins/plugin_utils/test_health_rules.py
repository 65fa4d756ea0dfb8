# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _health_rules: the GPU health refusals and warnings of the serving plan.

The facts come from the lab's nvidia-smi stand-in with injected faults, read by the real parsers
(_gpu_facts, _gpu_health), then through build_report as preflight and engine_service run it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import QUERY_ARGS, TOPO_ARGS, build_facts
from ansible_collections.volta.serving.plugins.module_utils._gpu_health import (
    XML_ARGS,
    build_health,
    health_lines,
    sysfs_gpus,
)
from ansible_collections.volta.serving.plugins.plugin_utils._health_rules import (
    HEALTH_RULES,
    check_gpu_health,
    failed_gpus,
)
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report
from ansible_collections.volta.serving.plugins.plugin_utils._rules import RULES
from gpu_sim_root import PROPRIETARY, SIMULATOR, write_sim_root

VERSIONS = {
    "vllm": {"version": "0.21.0", "torch_version": "2.11.0", "torch_cuda": "cu126"},
    "onecat": {"version": "1.5.1", "torch_version": "2.10.0", "torch_cuda": "cu128"},
}
PCIE = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0", "nvlink_islands": [],
        "ram_gb": 251}
INSTANCE_A = {"name": "chat-a", "engine": "vllm", "model": "/srv/models/command-r-32b", "served_model_name": "chat-a",
              "gpus": [0, 1, 2, 3], "tensor_parallel": 4, "max_model_len": 32768, "max_num_seqs": 16, "port": 8001}
INSTANCE_B = {**INSTANCE_A, "name": "chat-b", "served_model_name": "chat-b", "gpus": [4, 5, 6, 7], "port": 8002}


def lab_facts(tmp_path, faults=None, profile="v100-pcie-8"):
    """The volta_gpu fact (with health) of a lab host, as gpu_facts builds it from the stand-in."""
    root = write_sim_root(tmp_path / "root", profile, faults or {})

    def smi(args):
        done = subprocess.run([sys.executable, str(SIMULATOR), *args], env={"VOLTA_GPU_SIM_ROOT": str(root)},
                              capture_output=True, text=True, timeout=60, check=False)
        return done.returncode, done.stdout

    query, topo, xml = smi(QUERY_ARGS), smi(TOPO_ARGS), smi(XML_ARGS)
    facts = build_facts(*query, *topo, PROPRIETARY)
    facts["health"] = build_health(*xml, facts["gpus"], sysfs_gpus(str(root / "var/lib/volta-lab/gpu-sim/sys")))
    return facts


def report(facts, instances=(INSTANCE_A, INSTANCE_B)):
    return build_report(PlanInputs("lab-host", dict(PCIE), [dict(i) for i in instances], engine_versions=VERSIONS,
                        generate_keys=True, gpu_facts=facts))


def health_findings(rep):
    return [f for f in rep["findings"] if f["rule"] in HEALTH_RULES]


def test_rules_are_registered():
    assert set(HEALTH_RULES) <= set(RULES)
    assert [RULES[r][0] for r in HEALTH_RULES] == ["error", "error", "error", "warning", "warning", "error"]


def test_healthy_lab_host_gets_no_new_finding(tmp_path):
    rep = report(lab_facts(tmp_path))
    assert health_findings(rep) == []
    assert not [f for f in rep["findings"] if f["rule"] == "gpu-facts-mismatch"]


def test_unknown_health_gets_no_finding(tmp_path):
    facts = lab_facts(tmp_path)
    facts["health"] = {"status": "unknown", "message": "nvidia-smi -q -x failed with rc=2"}
    assert check_gpu_health(facts, PCIE, [], {"host": "lab-host"}) == []
    del facts["health"]  # a fact gathered by an older gpu_facts
    assert check_gpu_health(facts, PCIE, [], {"host": "lab-host"}) == []


@pytest.mark.parametrize(
    ("faults", "rule", "field", "instance", "text"),
    [
        ({"00000000:3E:00.0": {"pending_retirement": True}}, "gpu-pending-retirement", "GPU 3 (00000000:3E:00.0)",
         None, "GPU 3 (00000000:3E:00.0): memory pages wait for retirement"),
        ({"00000000:3E:00.0": {"pending_retirement": True}}, "instance-on-failed-gpu", "gpus", "chat-a",
         "refusing to start instance chat-a on GPU 3: GPU 3 (00000000:3E:00.0): memory pages wait for retirement"),
        ({"00000000:89:00.0": {"ecc_volatile_uncorrectable": 3}}, "gpu-ecc-uncorrectable",
         "GPU 5 (00000000:89:00.0)", None, "GPU 5 (00000000:89:00.0): 3 uncorrectable ECC error(s)"),
        ({"00000000:89:00.0": {"ecc_volatile_uncorrectable": 3}}, "instance-on-failed-gpu", "gpus", "chat-b",
         "refusing to start instance chat-b on GPU 5"),
        ({"00000000:3D:00.0": {"missing": True}}, "gpu-missing", "volta_server.gpu_count", None,
         "volta_server.gpu_count is 8, nvidia-smi lists 7; missing: GPU 2 at PCI 0000:3d:00.0"),
        ({"00000000:3D:00.0": {"missing": True}}, "instance-on-failed-gpu", "gpus", "chat-a",
         "GPU 2 (0000:3d:00.0) is not listed by nvidia-smi"),
        ({"00000000:B1:00.0": {"link_width": 8, "link_gen": 1}}, "pcie-link-degraded", "GPU 6 (00000000:B1:00.0)",
         None, "PCIe link trained down: x8 of x16"),
        ({"00000000:1A:00.0": {"throttle": ["hw_slowdown", "sw_power_cap"]}}, "gpu-throttled",
         "GPU 0 (00000000:1A:00.0)", None, "clocks held down by hw_slowdown."),
    ],
)
def test_fault_gives_finding(tmp_path, faults, rule, field, instance, text):
    rep = report(lab_facts(tmp_path, faults))
    hits = [f for f in rep["findings"] if f["rule"] == rule]
    assert len(hits) == 1, [f["message"] for f in rep["findings"]]
    hit = hits[0]
    assert (hit["field"], hit["instance"]) == (field, instance)
    assert text in hit["message"]
    assert " Why: " in hit["message"] and " Fix: " in hit["message"]
    if hit["severity"] == "error":
        assert rep["errors"] >= 1


def test_degraded_gpu_is_not_failed(tmp_path):
    rep = report(lab_facts(tmp_path, {"00000000:1A:00.0": {"link_width": 8, "throttle": ["hw_thermal_slowdown"]}}))
    assert {f["rule"] for f in health_findings(rep)} == {"pcie-link-degraded", "gpu-throttled"}
    assert not [f for f in rep["findings"] if f["rule"] == "instance-on-failed-gpu"]


def test_disabled_instance_on_failed_gpu_is_not_refused(tmp_path):
    facts = lab_facts(tmp_path, {"00000000:1A:00.0": {"ecc_volatile_uncorrectable": 1}})
    rep = report(facts, [{**INSTANCE_A, "enabled": False}, INSTANCE_B])
    assert [f["rule"] for f in health_findings(rep)] == ["gpu-ecc-uncorrectable"]


def test_missing_without_sysfs_still_refuses_the_count(tmp_path):
    facts = lab_facts(tmp_path, {"00000000:3D:00.0": {"missing": True}})
    facts["health"]["pci_functions"], facts["health"]["missing"] = None, []
    facts["health"]["problems"] = [p for p in facts["health"]["problems"] if p["kind"] != "missing"]
    (hit,) = [f for f in check_gpu_health(facts, PCIE, [], {"host": "lab-host"}) if f["rule"] == "gpu-missing"]
    assert "the missing GPU's bus id is unknown" in hit["message"]
    assert failed_gpus(facts["health"]) == {}


def test_health_line(tmp_path):
    fault = {"pending_retirement": True, "retired_double_bit": 2, "link_gen": 1, "throttle": ["hw_slowdown"]}
    lines = health_lines(lab_facts(tmp_path, {"00000000:1B:00.0": fault}))
    assert lines[0] == ("GPU 0 00000000:1A:00.0: ECC uncorrected 0, retired 0+0, PCIe Gen3/3 x16/16, "
                        "throttle none")
    assert lines[1] == ("GPU 1 00000000:1B:00.0: ECC uncorrected 0, retired 0+2 PENDING, PCIe Gen1/3 x16/16, "
                        "throttle hw_slowdown, FAILED")


def test_health_lines_name_lost_gpus_and_unknown_health(tmp_path):
    facts = lab_facts(tmp_path, {"00000000:3D:00.0": {"missing": True}})
    lines = health_lines(facts)
    assert len(lines) == 8
    assert lines[-1] == "PCI 0000:3d:00.0: in sysfs, not listed by nvidia-smi (lost)"
    assert health_lines({"status": "ok"}) == ["health not read"]
    assert health_lines({"health": {"status": "unknown", "message": "nvidia-smi -q -x failed with rc=2: 'x'"}}) == [
        "health unknown: nvidia-smi -q -x failed with rc=2: 'x'"]
