# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_gpu_facts.py and the lab nvidia-smi stand-in.

Ground truth: the real captures in tests/fixtures/nvidia-smi/h200x2-ubuntu2404-driver580/ (read at
test time) and expectations written below from the profile definitions. Nothing here compares output
with values produced by the code under test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import (
    QUERY_FIELDS,
    GpuFactsError,
    build_facts,
    classify_failure,
    needs_topology,
    parse_proc_version,
    parse_query_csv,
    parse_topo_matrix,
)

REPO = Path(__file__).resolve().parents[4]
CAPTURES = REPO / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"
SIMULATOR = REPO / "tests" / "lab" / "gpu-sim" / "nvidia-smi"
QUERY_ARGS = ["--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"]
# The 12 fields of the capture's query.csv (see the fixtures README).
CAPTURE_QUERY_FIELDS = (*QUERY_FIELDS, "power.limit", "clocks.max.sm", "vbios_version", "serial")

PROPRIETARY_580 = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Thu Sep 25 04:05:53 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) \n"
)

NO_DRIVER_TEXT = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running."
)

# Expectations written from the profile definitions (tests/lab/gpu-sim/profiles.json, README.md).
PROFILES = {
    "v100-sxm2-10": {
        "count": 10,
        "name": "Tesla V100-SXM2-32GB",
        "islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
        "pcie_only": False,
        "power_limit": "300.00 W",
        "nvlinks_per_gpu": 6,
        "nv_cells": {"quad": "NV2", "dual": "NV6"},
    },
    "v100-pcie-8": {
        "count": 8,
        "name": "Tesla V100-PCIE-32GB",
        "islands": [],
        "pcie_only": True,
        "power_limit": "250.00 W",
        "nvlinks_per_gpu": 0,
        "nv_cells": {},
    },
}


def capture(name):
    path = CAPTURES / name
    if not path.is_file():
        pytest.fail(f"real nvidia-smi capture missing: {path}")
    return path.read_text(encoding="utf-8")


def make_root(tmp_path, profile="v100-sxm2-10", library="580.95.05", loaded=PROPRIETARY_580):
    """Populate a VOLTA_GPU_SIM_ROOT the way the lab's driver stand-in does."""
    root = tmp_path / "root"
    (root / "etc/volta-lab").mkdir(parents=True)
    (root / "etc/volta-lab/gpu-profile").write_text(profile + "\n")
    if library is not None:
        (root / "usr/share/volta-lab/gpu-sim").mkdir(parents=True)
        (root / "usr/share/volta-lab/gpu-sim/library-version").write_text(library + "\n")
    if loaded is not None:
        (root / "var/lib/volta-lab/driver").mkdir(parents=True)
        (root / "var/lib/volta-lab/driver/version").write_text(loaded)
    return root


def sim(root, *args, simulator=SIMULATOR, profile=None):
    env = {"PATH": "/usr/bin:/bin", "VOLTA_GPU_SIM_ROOT": str(root), "VOLTA_GPU_SIM_NOW": "Sun Nov 29 13:23:57 2026"}
    if profile:
        env["VOLTA_GPU_SIM_PROFILE"] = profile
    return subprocess.run(
        [sys.executable, str(simulator), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


# --------------------------------------------------------------------------- real captures


def test_capture_query_parses():
    gpus = parse_query_csv(capture("query-noheader.csv"))
    assert gpus == [
        {
            "index": i,
            "pci_bus_id": f"00000000:00:0{6 + i}.0",
            "name": "NVIDIA H200",
            "uuid": f"GPU-00000000-0000-0000-0000-00000000000{i}",
            "compute_capability": "9.0",
            "memory_total_mib": 143771,
            "driver_version": "580.159.04",
            "persistence_mode": True,
        }
        for i in (0, 1)
    ]


def test_capture_topo_parses():
    topo = parse_topo_matrix(capture("topo.txt"))
    assert topo["gpus"] == [0, 1]
    assert topo["links"] == {(0, 1): "NV18"}
    assert topo["nvlink_islands"] == [[0, 1]]
    assert topo["pcie_only"] is False


def test_capture_proc_version_parses():
    assert parse_proc_version(capture("proc-version.txt")) == {"version": "580.159.04", "kernel_module": "open"}


def test_capture_build_facts():
    facts = build_facts(0, capture("query-noheader.csv"), 0, capture("topo.txt"), capture("proc-version.txt"))
    assert facts["status"] == "ok"
    assert facts["gpu_count"] == 2
    assert [g["index"] for g in facts["gpus"]] == [0, 1]
    assert facts["nvlink_islands"] == [[0, 1]]
    assert facts["pcie_only"] is False
    assert facts["driver_version"] == "580.159.04"
    assert facts["loaded_driver_version"] == "580.159.04"
    assert facts["kernel_module"] == "open"
    assert facts["min_compute_capability"] == "9.0"


# --------------------------------------------------------------------------- parsers, table-driven


@pytest.mark.parametrize(
    "text, version, module",
    [
        (PROPRIETARY_580, "580.95.05", "proprietary"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n",
         "580.159.04", "open"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.95.05  Release Build  (x@y)  \n",
         "580.95.05", "open"),
        ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  570.172.08  Release Build  (x@y)  \n",
         "570.172.08", "proprietary"),
        ("\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Tue Jul 15 2025\n", "535.261.03",
         "proprietary"),
    ],
)
def test_parse_proc_version(text, version, module):
    assert parse_proc_version(text) == {"version": version, "kernel_module": module}


@pytest.mark.parametrize(
    "line",
    [
        "NVRM version: something else entirely",
        "GCC version:  gcc version 13.3.0",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  latest  Release Build",
    ],
)
def test_parse_proc_version_garbage_quotes_line(line):
    with pytest.raises(GpuFactsError) as err:
        parse_proc_version(line + "\n")
    assert repr(line) in str(err.value)


GOOD_ROW = (
    "0, 00000000:18:00.0, Tesla V100-SXM2-32GB, GPU-00000000-0000-0000-0000-000000000000, 7.0, 32768, "
    "580.95.05, Disabled"
)


@pytest.mark.parametrize(
    "line, reason",
    [
        ("0, 00000000:18:00.0, Tesla V100-SXM2-32GB, 7.0, 32768, 580.95.05, Disabled", "expected 8"),
        (GOOD_ROW + ", extra", "expected 8"),
        (GOOD_ROW.replace("0, 0000", "x, 0000", 1), "index"),
        (GOOD_ROW.replace("00000000:18:00.0", "18:00.0"), "pci.bus_id"),
        (GOOD_ROW.replace("GPU-00000000-0000-0000-0000-000000000000", "MIG-1234"), "uuid"),
        (GOOD_ROW.replace(", 7.0,", ", [N/A],"), "compute_cap"),
        (GOOD_ROW.replace("32768", "32 GiB"), "memory.total"),
        (GOOD_ROW.replace("580.95.05", "unknown"), "driver_version"),
        (GOOD_ROW.replace("Disabled", "[N/A]"), "persistence_mode"),
        ("Segmentation fault (core dumped)", "expected 8"),
    ],
)
def test_parse_query_garbage_quotes_line(line, reason):
    with pytest.raises(GpuFactsError) as err:
        parse_query_csv(GOOD_ROW + "\n" + line + "\n")
    assert repr(line) in str(err.value)
    assert reason in str(err.value)


def test_parse_query_good_row():
    assert parse_query_csv(GOOD_ROW + "\n\n") == [
        {
            "index": 0,
            "pci_bus_id": "00000000:18:00.0",
            "name": "Tesla V100-SXM2-32GB",
            "uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "compute_capability": "7.0",
            "memory_total_mib": 32768,
            "driver_version": "580.95.05",
            "persistence_mode": False,
        }
    ]


TOPO_HEADER = "\t\x1b[4mGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m"


@pytest.mark.parametrize(
    "rows, islands",
    [
        (["GPU0\t X \tNV2\tSYS\t0-7\t0\t\tN/A", "GPU1\tNV2\t X \tSYS\t0-7\t0\t\tN/A",
          "GPU2\tSYS\tSYS\t X \t8-15\t1\t\tN/A"], [[0, 1]]),
        (["GPU0\t X \tPIX\tNV1\t0-7\t0\t\tN/A", "GPU1\tPIX\t X \tNV1\t0-7\t0\t\tN/A",
          "GPU2\tNV1\tNV1\t X \t8-15\t1\t\tN/A"], [[0, 1, 2]]),
        (["GPU0\t X \tPXB\tPHB\t0-7\t0\t\tN/A", "GPU1\tPXB\t X \tNODE\t0-7\t0\t\tN/A",
          "GPU2\tPHB\tNODE\t X \t8-15\t1\t\tN/A"], []),
    ],
)
def test_parse_topo_islands(rows, islands):
    topo = parse_topo_matrix("\n".join([TOPO_HEADER, *rows, "", "Legend:", ""]))
    assert topo["nvlink_islands"] == islands
    assert topo["pcie_only"] is (islands == [])


def test_parse_topo_with_nic_columns():
    text = "\n".join([
        "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m",
        "GPU0\t X \tSYS\tPIX\t0-7\t0\t\tN/A",
        "GPU1\tSYS\t X \tSYS\t8-15\t1\t\tN/A",
        "NIC0\tPIX\tSYS\t X ",
        "",
        "NIC Legend:",
        "",
        "  NIC0: mlx5_0",
    ])
    topo = parse_topo_matrix(text)
    assert topo["gpus"] == [0, 1]
    assert topo["pcie_only"] is True


@pytest.mark.parametrize(
    "rows, bad",
    [
        (["GPU0\t X \tNV2\tSYS\t0-7\t0\t\tN/A", "GPU1\tNV2\t X \tWAT\t0-7\t0\t\tN/A",
          "GPU2\tSYS\tSYS\t X \t8-15\t1\t\tN/A"], "GPU1\tNV2\t X \tWAT\t0-7\t0\t\tN/A"),
        (["GPU0\t X \tNV2\t0-7\t0\t\tN/A"], "GPU0\t X \tNV2\t0-7\t0\t\tN/A"),
        (["GPU0\t X \tNV2\tSYS\t0-7\t0\t\tN/A", "oops this is not a row"], "oops this is not a row"),
        (["GPU0\tNV2\tNV2\tSYS\t0-7\t0\t\tN/A", "GPU1\tNV2\t X \tSYS\t0-7\t0\t\tN/A",
          "GPU2\tSYS\tSYS\t X \t8-15\t1\t\tN/A"], "GPU0\tNV2\tNV2\tSYS\t0-7\t0\t\tN/A"),
    ],
)
def test_parse_topo_garbage_quotes_line(rows, bad):
    with pytest.raises(GpuFactsError) as err:
        parse_topo_matrix("\n".join([TOPO_HEADER, *rows, ""]))
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(
    "text, quoted",
    [
        ("Segmentation fault\n", "Segmentation fault"),
        ("\n\nGPU 0: Tesla V100 (UUID: GPU-x)\n", "GPU 0: Tesla V100 (UUID: GPU-x)"),
    ],
)
def test_parse_topo_without_header_quotes_first_line(text, quoted):
    with pytest.raises(GpuFactsError) as err:
        parse_topo_matrix(text)
    assert repr(quoted) in str(err.value)


def test_parse_topo_missing_row():
    with pytest.raises(GpuFactsError, match="no matrix row for GPU2"):
        parse_topo_matrix("\n".join([TOPO_HEADER, "GPU0\t X \tNV2\tSYS\t0-7\t0\t\tN/A",
                                     "GPU1\tNV2\t X \tSYS\t0-7\t0\t\tN/A", ""]))


@pytest.mark.parametrize(
    "rc, output, status, message",
    [
        (9, NO_DRIVER_TEXT + "\n\n", "no_driver", NO_DRIVER_TEXT),
        (12, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure", "no_driver",
         "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure"),
        (18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n",
         "driver_mismatch", "Failed to initialize NVML: Driver/library version mismatch (NVML library version 580.95)"),
        (6, "No devices were found\n", "no_devices", "No devices were found"),
    ],
)
def test_classify_failure(rc, output, status, message):
    result = classify_failure(rc, output)
    assert result["status"] == status
    assert result["message"] == message
    facts = build_facts(rc, output)
    assert facts["status"] == status
    assert facts["message"] == message
    assert facts["gpu_count"] == 0 and facts["gpus"] == [] and facts["pcie_only"] is None
    assert needs_topology(rc, output) is False


@pytest.mark.parametrize("output", [GOOD_ROW + "\n", "random text\n", ""])
def test_classify_failure_ignores_other_text(output):
    assert classify_failure(0, output) is None


def test_build_facts_unknown_failure_quotes_output():
    with pytest.raises(GpuFactsError) as err:
        build_facts(255, "\nSomething exploded in NVML\n")
    assert "rc=255" in str(err.value)
    assert repr("Something exploded in NVML") in str(err.value)


def test_build_facts_query_and_topo_disagree():
    topo = "\n".join(["\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m",
                      "GPU0\t X \tSYS\t0-7\t0\t\tN/A", "GPU1\tSYS\t X \t0-7\t0\t\tN/A", ""])
    with pytest.raises(GpuFactsError, match=re.escape("GPUs [0] in --query-gpu but [0, 1] in topo -m")):
        build_facts(0, GOOD_ROW + "\n", 0, topo)


def test_build_facts_empty_query_is_no_devices():
    assert build_facts(0, "\n")["status"] == "no_devices"
    assert needs_topology(0, "\n") is False
    assert needs_topology(0, GOOD_ROW) is True


# --------------------------------------------------------------------------- the simulator


TRAMPOLINE = "''''exec python3 \"$0\" \"$@\" # '''"


def test_simulator_says_it_is_a_stand_in(tmp_path):
    head = SIMULATOR.read_text(encoding="utf-8").splitlines()[:8]
    assert head[0] == "#!/bin/sh"
    assert TRAMPOLINE in head, "the sh trampoline to python3"
    assert any("STAND-IN" in line for line in head)
    assert SIMULATOR.stat().st_mode & 0o111, "simulator must be executable"
    direct = subprocess.run([str(SIMULATOR), "--help"], capture_output=True, text=True, timeout=60, check=False,
                            env={"PATH": "/usr/bin:/bin"})
    assert direct.returncode == 0 and direct.stdout.startswith("nvidia-smi STAND-IN"), direct.stderr
    for flag in ("-h", "--help"):
        result = sim(tmp_path, flag)
        assert result.returncode == 0
        first = result.stdout.splitlines()[0]
        assert "STAND-IN" in first and "NOT NVIDIA's nvidia-smi" in first


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_query_parses_to_profile(tmp_path, profile):
    want = PROFILES[profile]
    result = sim(make_root(tmp_path, profile), *QUERY_ARGS)
    assert result.returncode == 0, result.stdout + result.stderr
    gpus = parse_query_csv(result.stdout)
    assert len(gpus) == want["count"]
    assert [g["index"] for g in gpus] == list(range(want["count"]))
    assert {g["name"] for g in gpus} == {want["name"]}
    assert {g["compute_capability"] for g in gpus} == {"7.0"}
    assert {g["memory_total_mib"] for g in gpus} == {32768}
    assert {g["driver_version"] for g in gpus} == {"580.95.05"}
    assert {g["persistence_mode"] for g in gpus} == {False}
    assert [g["uuid"] for g in gpus] == [f"GPU-00000000-0000-0000-0000-{i:012d}" for i in range(want["count"])]
    bus_ids = [g["pci_bus_id"] for g in gpus]
    assert len(set(bus_ids)) == len(bus_ids)
    assert bus_ids == sorted(bus_ids), "nvidia-smi enumerates in PCI bus order"


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_topo_parses_to_profile(tmp_path, profile):
    want = PROFILES[profile]
    result = sim(make_root(tmp_path, profile), "topo", "-m")
    assert result.returncode == 0, result.stdout + result.stderr
    topo = parse_topo_matrix(result.stdout)
    assert topo["gpus"] == list(range(want["count"]))
    assert topo["nvlink_islands"] == want["islands"]
    assert topo["pcie_only"] is want["pcie_only"]
    island_of = {gpu: tuple(island) for island in want["islands"] for gpu in island}
    for (a, b), cell in topo["links"].items():
        if a in island_of and island_of[a] == island_of.get(b):
            kind = "quad" if len(island_of[a]) == 4 else "dual"
            assert cell == want["nv_cells"][kind], (a, b, cell)
        else:
            assert cell in ("PIX", "PXB", "PHB", "NODE", "SYS"), (a, b, cell)
    if profile == "v100-pcie-8":
        # two sockets: GPU0-3 on one, GPU4-7 on the other
        assert all(topo["links"][(a, b)] == "SYS" for a in range(4) for b in range(4, 8))
        assert all(topo["links"][(a, b)] != "SYS" for a in range(4) for b in range(a + 1, 4))


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_build_facts(tmp_path, profile):
    want = PROFILES[profile]
    root = make_root(tmp_path, profile)
    query = sim(root, *QUERY_ARGS)
    topo = sim(root, "topo", "-m")
    facts = build_facts(query.returncode, query.stdout, topo.returncode, topo.stdout,
                        (root / "var/lib/volta-lab/driver/version").read_text())
    assert facts["status"] == "ok"
    assert facts["gpu_count"] == want["count"]
    assert facts["nvlink_islands"] == want["islands"]
    assert facts["pcie_only"] is want["pcie_only"]
    assert facts["min_compute_capability"] == "7.0"
    assert facts["driver_version"] == facts["loaded_driver_version"] == "580.95.05"
    assert facts["kernel_module"] == "proprietary"


CELL_SHAPES = [
    r"\d+", r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d", r"[A-Za-z0-9 -]+", r"GPU-[0-9a-f-]{36}", r"\d+\.\d",
    r"\d+ MiB", r"\d+\.\d+\.\d+", r"Enabled|Disabled", r"\d+\.\d\d W", r"\d+ MHz", r"[0-9A-F]{2}(\.[0-9A-F]{2}){4}",
    r"\d{13}",
]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_query_shape_matches_capture(tmp_path, profile):
    real = capture("query.csv").splitlines()
    result = sim(make_root(tmp_path, profile), "--query-gpu=" + ",".join(CAPTURE_QUERY_FIELDS), "--format=csv")
    assert result.returncode == 0, result.stdout + result.stderr
    ours = result.stdout.splitlines()
    assert ours[0] == real[0], "the header line does not depend on the GPU and must be identical"
    assert len(ours) == 1 + PROFILES[profile]["count"]
    for line in real[1:] + ours[1:]:
        cells = line.split(", ")
        assert len(cells) == len(CELL_SHAPES), line
        for shape, cell in zip(CELL_SHAPES, cells, strict=False):
            assert re.fullmatch(shape, cell), (shape, cell, line)
    assert {line.split(", ")[8] for line in ours[1:]} == {PROFILES[profile]["power_limit"]}
    noheader = sim(make_root(tmp_path / "nh", profile), *QUERY_ARGS).stdout.splitlines()
    real_noheader = capture("query-noheader.csv").splitlines()
    assert {len(line.split(", ")) for line in noheader} == {len(real_noheader[0].split(", "))} == {8}


TOPO_HEADER_RE = re.compile(r"^\t\x1b\[4m(GPU\d+\t)+CPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b\[0m$")
TOPO_ROW_RE = re.compile(r"^GPU\d+(\t( X |NV\d+|SYS|NODE|PHB|PXB|PIX))+\t[0-9,-]+\t\d+\t\tN/A$")


def _topo_parts(text):
    lines = text.split("\n")
    blank = lines.index("")
    return lines[0], lines[1:blank], "\n".join(lines[blank:])


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_topo_shape_matches_capture(tmp_path, profile):
    real_header, real_rows, real_legend = _topo_parts(capture("topo.txt"))
    result = sim(make_root(tmp_path, profile), "topo", "-m")
    header, rows, legend = _topo_parts(result.stdout)
    assert TOPO_HEADER_RE.match(real_header) and TOPO_HEADER_RE.match(header), repr(header)
    assert header.count("\t") == PROFILES[profile]["count"] + 3
    assert all(TOPO_ROW_RE.match(row) for row in real_rows)
    assert len(rows) == PROFILES[profile]["count"]
    for row in rows:
        assert TOPO_ROW_RE.match(row), repr(row)
    assert legend == real_legend


SMI_ROW_RES = [
    re.compile(r"^\|\s+\d+  [A-Za-z0-9 -]{29} (On| On|Off)  \|   [0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d Off \|"
               r"\s+0 \|$"),
    re.compile(r"^\| N/A +\d+C    P0 +\d+W / +\d+W \| +\d+MiB / +\d+MiB \| +\d+%      Default \|$"),
    re.compile(r"^\|                                         \|                        \| +(N/A|Disabled) \|$"),
    re.compile(r"^\+-{41}\+-{24}\+-{22}\+$"),
]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_table_shape_matches_capture(tmp_path, profile):
    real = capture("smi.txt").splitlines()
    ours = sim(make_root(tmp_path, profile)).stdout.splitlines()
    count = PROFILES[profile]["count"]
    assert len(ours) == len(real) + 4 * (count - 2)
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} {7}", real[0])
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} {7}", ours[0])
    assert all(len(line) == 91 for line in ours[1:] if line)
    assert ours[1] == real[1] and ours[3:8] == real[3:8], "the table head is fixed text"
    assert ours[2] == "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |"
    assert ours[-8:] == real[-8:], "the processes block is fixed text on an idle host"
    for n, line in enumerate(real[8:16] + ours[8:8 + 4 * count]):
        assert SMI_ROW_RES[n % 4].match(line), repr(line)
    assert sum(PROFILES[profile]["name"] in line for line in ours) == count
    assert sum(" 300W |" in line for line in ours) == (count if profile == "v100-sxm2-10" else 0)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_simulator_list_and_nvlink(tmp_path, profile):
    want = PROFILES[profile]
    root = make_root(tmp_path, profile)
    line_re = re.compile(r"^GPU (\d+): (.+) \(UUID: (GPU-[0-9a-f-]{36})\)$")
    assert all(line_re.match(line) for line in capture("smi-L.txt").splitlines())
    listed = sim(root, "-L").stdout.splitlines()
    assert [line_re.match(line).group(1, 2) for line in listed] == [
        (str(i), want["name"]) for i in range(want["count"])
    ]

    link_re = re.compile(r"^\t Link \d+: \d+\.\d{3} GB/s$")
    assert all(line_re.match(line) or link_re.match(line) for line in capture("nvlink-s.txt").splitlines())
    ours = sim(root, "nvlink", "-s").stdout.splitlines()
    headers = [line for line in ours if line_re.match(line)]
    links = [line for line in ours if link_re.match(line)]
    # a real 580 driver prints nothing at all for a GPU without NVLink (seen on a lone H200)
    assert len(headers) == (want["count"] if want["nvlinks_per_gpu"] else 0)
    assert len(headers) + len(links) == len(ours)
    assert len(links) == want["count"] * want["nvlinks_per_gpu"]
    assert all(line.endswith(": 25.781 GB/s") for line in links)
    one = sim(root, "nvlink", "-s", "-i", "1")
    assert one.returncode == 0
    if want["nvlinks_per_gpu"]:
        assert one.stdout.startswith("GPU 1: ") and len(one.stdout.splitlines()) == 1 + want["nvlinks_per_gpu"]
    else:
        assert one.stdout == ""
    for sub in ("topo", "nvlink"):
        usage = sim(root, sub)
        assert usage.returncode == 0 and usage.stdout.startswith(f"\n    {sub} -- "), "usage text, like the real tool"


H200_PROFILE = {
    "profiles": {
        "h200-capture": {
            "numa_nodes": {"0": {"cpu_affinity": "0-31"}},
            "nvlink_groups": [{"gpus": [0, 1], "links_per_pair": 18}],
            "gpu_defaults": {
                "name": "NVIDIA H200", "compute_cap": "9.0", "memory_total_mib": 143771, "power_limit_w": 700,
                "clocks_max_sm_mhz": 1980, "clocks_max_mem_mhz": 3201, "vbios_version": "96.00.A5.00.1A",
                "serial": "1650000000000", "mig_mode": "Disabled", "nvlink_speed_gbps": "26.562", "numa_node": 0,
            },
            "gpus": [
                {"bus_id": "00000000:00:06.0", "temperature_c": 30, "power_draw_w": 108},
                {"bus_id": "00000000:00:07.0", "temperature_c": 29, "power_draw_w": 121},
            ],
        }
    }
}


def test_simulator_reproduces_real_capture_bytes(tmp_path):
    """Fed the captured host's values, the simulator must print the captures byte for byte."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(SIMULATOR, bindir / "nvidia-smi")
    (bindir / "profiles.json").write_text(json.dumps(H200_PROFILE))
    root = make_root(tmp_path, "h200-capture", library="580.159.04", loaded=capture("proc-version.txt"))

    def run(*args):
        return sim(root, *args, simulator=bindir / "nvidia-smi")

    assert run("-pm", "1").returncode == 0
    query = "--query-gpu=" + ",".join(CAPTURE_QUERY_FIELDS)
    assert run(query, "--format=csv").stdout == capture("query.csv")
    assert run(*QUERY_ARGS).stdout == capture("query-noheader.csv")
    assert run("-L").stdout == capture("smi-L.txt")
    assert run("topo", "-m").stdout == capture("topo.txt")
    assert run("nvlink", "-s").stdout == capture("nvlink-s.txt")
    assert run().stdout == capture("smi.txt"), "VOLTA_GPU_SIM_NOW is set to the capture's timestamp"


# --------------------------------------------------------------------------- simulator failure modes


MISMATCH_OUT = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n"


@pytest.mark.parametrize(
    "library, loaded, rc, stdout, status",
    [
        ("580.95.05", None, 9, NO_DRIVER_TEXT + "\n\n", "no_driver"),
        ("580.95.05", PROPRIETARY_580.replace("580.95.05", "580.82.07"), 18, MISMATCH_OUT, "driver_mismatch"),
        ("590.44.01", PROPRIETARY_580.replace("580.95.05", "590.44.01"), 6, "No devices were found\n", "no_devices"),
        ("580.95.05", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (x@)  \n",
         6, "No devices were found\n", "no_devices"),
        (None, PROPRIETARY_580, 12, None, "no_driver"),
    ],
    ids=["no-module", "mismatch", "590-on-volta", "open-module-on-volta", "no-library"],
)
@pytest.mark.parametrize("args", [(), ("-L",), tuple(QUERY_ARGS), ("topo", "-m"), ("-pm", "1")])
def test_simulator_failure_modes(tmp_path, *, library, loaded, rc, stdout, status, args):
    root = make_root(tmp_path, "v100-sxm2-10", library=library, loaded=loaded)
    result = sim(root, *args)
    assert result.returncode == rc
    if stdout is not None:
        assert result.stdout == stdout
    facts = build_facts(result.returncode, result.stdout + result.stderr)
    assert facts["status"] == status
    if status == "driver_mismatch":
        assert facts["driver_version"] == "580.95"
    assert not (root / "var/lib/volta-lab/gpu-sim/state.json").exists()


NOT_VALID = "ERROR: Option {} is not valid for this command. Please run 'nvidia-smi -h' for help.\n\n"


# Error texts and exit codes as real nvidia-smi 580.159.04 printed them on the H200 host.
@pytest.mark.parametrize(
    "args, rc, stdout",
    [
        (["--query-gpu=index,bogus.field", "--format=csv"], 2,
         'Field "bogus.field" is not a valid field to query.\n\n'),
        (["--query-gpu=index", "--format=json"], 2, "Format modifier is not recognized.\n"),
        (["--query-gpu=index", "-i", "3"], 0, "index\n3\n"),
        (["--query-gpu=index", "--format=noheader", "-i", "2,2"], 0, "2\n"),
        (["--frobnicate"], 255, "ERROR: Option --frobnicate is not recognized. Please run 'nvidia-smi -h'.\n\n"),
        (["-pm"], 255, "ERROR: Option -pm is missing its value. Please run 'nvidia-smi -h' for help.\n\n"),
        (["-pm", "7"], 2, "Invalid persistence mode: 7\nTerminating early due to previous errors.\n"),
        (["-i", "0", "-L"], 2, NOT_VALID.format("-i")),
        (["-L", "-q"], 2, NOT_VALID.format("-q")),
        (["topo", "-m", "-i", "0"], 255, "The -i command line argument must be used in conjunction with -n or -p.\n\n"),
        (["-i", "10", "--query-gpu=index", "--format=csv"], 6, "No devices were found\n"),
        (["nvlink", "-s", "-i", "12"], 6, "No devices were found\n"),
        (["-i", "1,GPU-00000000-0000-0000-0000-000000000003,00000000:88:00.0", "--query-gpu=index,uuid",
          "--format=csv,noheader"], 0,
         ("1, GPU-00000000-0000-0000-0000-000000000001\n"
          "3, GPU-00000000-0000-0000-0000-000000000003\n"
          "6, GPU-00000000-0000-0000-0000-000000000006\n")),
        (["--query-gpu=memory.used,memory.free,temperature.gpu,utilization.gpu,pstate,name", "--format=csv,noheader",
          "-i", "9"], 0, "0 MiB, 32768 MiB, 37, 0 %, P0, Tesla V100-SXM2-32GB\n"),
        (["--query-gpu=memory.used,utilization.gpu", "--format=csv,nounits", "-i", "0"], 0,
         "memory.used [MiB], utilization.gpu [%]\n0, 0\n"),
        (["--query-gpu=gpu_name,gpu_bus_id,fan.speed,mig.mode.current", "--format=csv", "-i", "0"], 0,
         "name, pci.bus_id, fan.speed [%], mig.mode.current\nTesla V100-SXM2-32GB, 00000000:18:00.0, [N/A], [N/A]\n"),
    ],
)
def test_simulator_arguments(tmp_path, args, rc, stdout):
    result = sim(make_root(tmp_path, "v100-sxm2-10"), *args)
    assert (result.returncode, result.stdout) == (rc, stdout)


def test_simulator_profile_env_overrides_file(tmp_path):
    root = make_root(tmp_path, "v100-sxm2-10")
    assert len(sim(root, "-L", profile="v100-pcie-8").stdout.splitlines()) == 8
    assert len(sim(root, "-L").stdout.splitlines()) == 10


def test_simulator_unknown_profile_is_a_lab_error(tmp_path):
    result = sim(make_root(tmp_path, "v100-nonexistent"), "-L")
    assert result.returncode == 255
    assert "STAND-IN" in result.stderr and "unknown GPU profile 'v100-nonexistent'" in result.stderr


def test_simulator_persistence_mode(tmp_path):
    root = make_root(tmp_path, "v100-pcie-8")
    state = root / "var/lib/volta-lab/gpu-sim/state.json"
    assert not state.exists()
    assert {g["persistence_mode"] for g in parse_query_csv(sim(root, *QUERY_ARGS).stdout)} == {False}

    enable = sim(root, "-pm", "1")
    bus_ids = [f"00000000:{b}:00.0" for b in ("1A", "1B", "3D", "3E", "88", "89", "B1", "B2")]
    assert enable.returncode == 0
    assert enable.stdout == "".join(f"Enabled persistence mode for GPU {b}.\n" for b in bus_ids) + "All done.\n"
    assert state.exists()
    assert json.loads(state.read_text())["persistence_mode"] == {b: True for b in bus_ids}
    assert {g["persistence_mode"] for g in parse_query_csv(sim(root, *QUERY_ARGS).stdout)} == {True}
    assert sim(root).stdout.count(" On  |") == 8

    again = sim(root, "-i", "0", "-pm", "ENABLED")
    assert again.stdout == "Persistence mode is already Enabled for GPU 00000000:1A:00.0.\nAll done.\n"

    disable = sim(root, "-i", "2", "--persistence-mode=0")
    assert disable.stdout == "Disabled persistence mode for GPU 00000000:3D:00.0.\nAll done.\n"
    modes = [g["persistence_mode"] for g in parse_query_csv(sim(root, *QUERY_ARGS).stdout)]
    assert modes == [True, True, False, True, True, True, True, True]
