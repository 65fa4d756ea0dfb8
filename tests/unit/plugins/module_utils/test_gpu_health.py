# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _gpu_health: the real H200 capture of nvidia-smi -q -x, N/A values, older schemas, sysfs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._gpu_health import (
    HEALTH_OK,
    HEALTH_UNKNOWN,
    GpuHealthError,
    build_health,
    gpu_problems,
    normalise_bus_id,
    parse_health_xml,
    sysfs_gpus,
)
from gpu_sim_root import SIMULATOR, write_sim_root

REPO = Path(__file__).resolve().parents[4]
Q_XML = REPO / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580" / "q.xml"


def real_xml():
    if not Q_XML.is_file():
        pytest.fail(f"real nvidia-smi capture missing: {Q_XML}")
    return Q_XML.read_text(encoding="utf-8")


def test_real_capture_h200():
    gpus = parse_health_xml(real_xml())
    assert [g["bus_id"] for g in gpus] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert [g["pci_address"] for g in gpus] == ["0000:00:06.0", "0000:00:07.0"]
    first = gpus[0]
    assert first["name"] == "NVIDIA H200"
    assert first["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}
    assert first["ecc"] == {"mode": "Enabled", "volatile": {"corrected": 0, "uncorrected": 0},
                            "aggregate": {"corrected": 0, "uncorrected": 0}}
    # Hopper: page retirement is all N/A, row remapping is what it reports.
    assert first["retired_pages"] == {"single_bit": None, "double_bit": None, "pending": None}
    assert first["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert first["throttle"] == ["gpu_idle"]
    assert first["temperature_c"] == 29
    assert first["power_draw_w"] == 92.53
    assert first["power_limit_w"] == 700


def test_real_capture_is_healthy():
    query = [{"index": 0, "pci_bus_id": "00000000:00:06.0"}, {"index": 1, "pci_bus_id": "00000000:00:07.0"}]
    health = build_health(0, real_xml(), query, ["0000:00:06.0", "0000:00:07.0"])
    assert health["status"] == HEALTH_OK
    assert health["problems"] == [] and health["missing"] == []
    assert [g["failed"] for g in health["gpus"]] == [False, False]


VOLTA_OLD = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <gpu id="00000000:1A:00.0">
    <product_name>Tesla V100-PCIE-32GB</product_name>
    <pci><pci_bus_id>00000000:1A:00.0</pci_bus_id>
      <pci_gpu_link_info>
        <pcie_gen><max_link_gen>3</max_link_gen><current_link_gen>1</current_link_gen></pcie_gen>
        <link_widths><max_link_width>16x</max_link_width><current_link_width>8x</current_link_width></link_widths>
      </pci_gpu_link_info></pci>
    <clocks_throttle_reasons>
      <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
      <clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown>
      <clocks_throttle_reason_sw_thermal_slowdown>Active</clocks_throttle_reason_sw_thermal_slowdown>
    </clocks_throttle_reasons>
    <ecc_mode><current_ecc>Enabled</current_ecc></ecc_mode>
    <ecc_errors>
      <volatile>
        <single_bit><device_memory>3</device_memory><total>3</total></single_bit>
        <double_bit><device_memory>2</device_memory><total>2</total></double_bit>
      </volatile>
      <aggregate>
        <single_bit><total>N/A</total></single_bit>
        <double_bit><total>[N/A]</total></double_bit>
      </aggregate>
    </ecc_errors>
    <retired_pages>
      <multiple_single_bit_retirement><retired_count>1</retired_count></multiple_single_bit_retirement>
      <double_bit_retirement><retired_count>2</retired_count></double_bit_retirement>
      <pending_blacklist>Yes</pending_blacklist>
      <pending_retirement>No</pending_retirement>
    </retired_pages>
    <temperature><gpu_temp>Not Supported</gpu_temp></temperature>
    <power_readings><power_draw>40.10 W</power_draw><power_limit>250.00 W</power_limit></power_readings>
  </gpu>
</nvidia_smi_log>
"""


def test_older_volta_schema_and_na_values():
    (gpu,) = parse_health_xml(VOLTA_OLD)
    assert gpu["ecc"]["volatile"] == {"corrected": 3, "uncorrected": 2}
    assert gpu["ecc"]["aggregate"] == {"corrected": None, "uncorrected": None}
    assert gpu["retired_pages"] == {"single_bit": 1, "double_bit": 2, "pending": True}
    assert gpu["remapped_rows"] is None
    assert gpu["throttle"] == ["hw_slowdown", "sw_thermal_slowdown"]
    assert gpu["temperature_c"] is None
    assert (gpu["power_draw_w"], gpu["power_limit_w"]) == (40.1, 250)


def test_problems_name_gpu_and_bus_id():
    health = build_health(0, VOLTA_OLD, [{"index": 3, "pci_bus_id": "00000000:1A:00.0"}],
                          ["0000:1a:00.0", "0000:1b:00.0"])
    texts = {p["kind"]: p["text"] for p in health["problems"]}
    assert texts["ecc-uncorrectable"] == (
        "GPU 3 (00000000:1A:00.0): 2 uncorrectable ECC error(s) since the driver loaded")
    assert texts["pending-retirement"].startswith("GPU 3 (00000000:1A:00.0): memory pages wait for retirement")
    assert texts["pcie-degraded"] == "GPU 3 (00000000:1A:00.0): PCIe link trained down: x8 of x16, Gen1 of Gen3"
    assert texts["throttled"] == "GPU 3 (00000000:1A:00.0): clocks held down by hw_slowdown, sw_thermal_slowdown"
    assert health["missing"] == ["0000:1b:00.0"]
    assert "0000:1b:00.0" in texts["missing"]
    assert health["gpus"][0]["failed"] is True


def test_an_idle_gpu_lowers_its_generation_not_its_width():
    idle = (VOLTA_OLD.replace("<clocks_throttle_reason_gpu_idle>Not Active", "<clocks_throttle_reason_gpu_idle>Active")
            .replace("<current_link_width>8x", "<current_link_width>16x"))
    (gpu,) = parse_health_xml(idle)
    assert "gpu_idle" in gpu["throttle"]
    assert [p["kind"] for p in gpu_problems(gpu)].count("pcie-degraded") == 0
    narrow = VOLTA_OLD.replace("<clocks_throttle_reason_gpu_idle>Not Active", "<clocks_throttle_reason_gpu_idle>Active")
    texts = {p["kind"]: p["text"] for p in gpu_problems(parse_health_xml(narrow)[0])}
    assert texts["pcie-degraded"].endswith("PCIe link trained down: x8 of x16")


@pytest.mark.parametrize(
    ("rc", "output", "message"),
    [
        (None, None, "nvidia-smi -q -x was not run"),
        (2, "nvidia-smi STAND-IN: -x (XML) is not simulated\n", "failed with rc=2"),
        (0, "GPU 00000000:1A:00.0\n", "not XML"),
        (0, "<other/>", "not <nvidia_smi_log>"),
    ],
)
def test_no_xml_is_unknown_not_an_error(rc, output, message):
    health = build_health(rc, output, [], ["0000:1a:00.0"])
    assert health["status"] == HEALTH_UNKNOWN
    assert message in health["message"]
    assert health["problems"] == [] and health["pci_functions"] == ["0000:1a:00.0"]


def test_parse_refuses_garbage_quoting_it():
    with pytest.raises(GpuHealthError, match="first line 'garbage'"):
        parse_health_xml("garbage\n")


@pytest.mark.parametrize(
    ("given", "expected"),
    [("00000000:1A:00.0", "0000:1a:00.0"), ("0000:1a:00.0", "0000:1a:00.0"), ("00000001:B0:00.1", "0001:b0:00.1"),
     ("1A:00.0", "0000:1a:00.0"), ("GPU0", None), (None, None)],
)
def test_normalise_bus_id(given, expected):
    assert normalise_bus_id(given) == expected


def test_sysfs_lists_nvidia_gpu_functions_only(tmp_path):
    devices = tmp_path / "bus" / "pci" / "devices"
    for name, vendor, klass in [("0000:1a:00.0", "0x10de", "0x030200"), ("0000:1a:00.1", "0x10de", "0x040300"),
                                ("0000:03:00.0", "0x10de", "0x030000"), ("0000:00:1f.0", "0x8086", "0x030000")]:
        (devices / name).mkdir(parents=True)
        (devices / name / "vendor").write_text(vendor + "\n")
        (devices / name / "class").write_text(klass + "\n")
    assert sysfs_gpus(str(tmp_path)) == ["0000:03:00.0", "0000:1a:00.0"]
    # bound to nvidia: counted; bound to vfio-pci (passed to a virtual machine): not this host's GPU
    drivers = tmp_path / "bus" / "pci" / "drivers"
    for driver in ("nvidia", "vfio-pci"):
        (drivers / driver).mkdir(parents=True)
    (devices / "0000:1a:00.0" / "driver").symlink_to(drivers / "nvidia")
    (devices / "0000:03:00.0" / "driver").symlink_to(drivers / "vfio-pci")
    assert sysfs_gpus(str(tmp_path)) == ["0000:1a:00.0"]
    assert sysfs_gpus(str(tmp_path / "absent")) is None


# --------------------------------------------------------------------------- the lab's nvidia-smi stand-in

def sim_root(tmp_path, profile, faults=None):
    return write_sim_root(tmp_path / "root", profile, faults)


def sim(root, *args):
    env = {"PATH": "/usr/bin:/bin", "VOLTA_GPU_SIM_ROOT": str(root)}
    return subprocess.run([sys.executable, str(SIMULATOR), *args], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def sim_health(root):
    query = sim(root, "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    report = sim(root, "-q", "-x")
    gpus = [{"index": int(i), "pci_bus_id": b.strip()}
            for i, b in (line.split(",") for line in query.stdout.splitlines())]
    functions = sysfs_gpus(str(root / "var/lib/volta-lab/gpu-sim/sys"))
    return build_health(report.returncode, report.stdout, gpus, functions)


@pytest.mark.parametrize(("profile", "name", "count"),
                         [("v100-sxm2-10", "Tesla V100-SXM2-32GB", 10), ("v100-pcie-8", "Tesla V100-PCIE-32GB", 8)])
def test_simulator_xml_is_healthy_volta(tmp_path, profile, name, count):
    health = sim_health(sim_root(tmp_path, profile))
    assert health["status"] == HEALTH_OK, health["message"]
    assert health["problems"] == [] and health["missing"] == []
    assert len(health["gpus"]) == count == len(health["pci_functions"])
    for gpu in health["gpus"]:
        assert gpu["name"] == name
        assert gpu["pcie"] == {"gen_current": 3, "gen_max": 3, "width_current": 16, "width_max": 16}
        assert gpu["retired_pages"] == {"single_bit": 0, "double_bit": 0, "pending": False}
        assert gpu["remapped_rows"] is None  # Volta has no row remapping
        assert gpu["ecc"]["volatile"] == {"corrected": 0, "uncorrected": 0}
        assert gpu["throttle"] == ["gpu_idle"]


def test_simulator_faults_reach_the_parser(tmp_path):
    faults = {"00000000:3D:00.0": {"missing": True},
              "0000:1b:00.0": {"ecc_volatile_uncorrectable": 2, "pending_retirement": True, "retired_double_bit": 1,
                               "link_width": 8, "link_gen": 1, "throttle": ["hw_slowdown"]}}
    health = sim_health(sim_root(tmp_path, "v100-pcie-8", faults))
    assert health["missing"] == ["0000:3d:00.0"]
    assert len(health["gpus"]) == 7 and len(health["pci_functions"]) == 8
    kinds = [(p["kind"], p["index"], p["bus_id"]) for p in health["problems"]]
    assert kinds == [("ecc-uncorrectable", 1, "00000000:1B:00.0"), ("pending-retirement", 1, "00000000:1B:00.0"),
                     ("pcie-degraded", 1, "00000000:1B:00.0"), ("throttled", 1, "00000000:1B:00.0"),
                     ("missing", None, "0000:3d:00.0")]
    texts = [p["text"] for p in health["problems"]]
    # The simulated GPUs are idle (no load): their generation does not count, their width does.
    assert texts[2].endswith("PCIe link trained down: x8 of x16")
    gpu = health["gpus"][1]
    assert gpu["failed"] is True and gpu["retired_pages"]["double_bit"] == 1
    # the GPU after the missing one moves up, as nvidia-smi enumerates
    assert health["gpus"][2]["bus_id"] == "00000000:3E:00.0" and health["gpus"][2]["index"] == 2


@pytest.mark.parametrize(("faults", "message"),
                         [({"00000000:1A:00.0": {"ecc": 1}}, "unknown fault 'ecc'"),
                          ({"00000000:1A:00.0": {"link_width": "8"}}, "expected int"),
                          ({"GPU0": {"missing": True}}, "not a PCI bus id")])
def test_simulator_refuses_bad_faults(tmp_path, faults, message):
    result = sim(sim_root(tmp_path, "v100-pcie-8", faults), "-q", "-x")
    assert result.returncode == 255
    assert message in result.stderr and "STAND-IN" in result.stderr


def test_simulator_xml_needs_q(tmp_path):
    result = sim(sim_root(tmp_path, "v100-pcie-8"), "-x")
    assert result.returncode == 2
    assert "Invalid combination of input arguments" in result.stdout


def test_simulator_answers_where_it_cannot_write_the_fake_sysfs(tmp_path):
    root = sim_root(tmp_path, "v100-pcie-8")
    blocker = root / "var/lib/volta-lab/gpu-sim/sys"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the tree would go\n")
    result = sim(root, "-q", "-x")
    assert result.returncode == 0, result.stderr
    assert len(parse_health_xml(result.stdout)) == 8
