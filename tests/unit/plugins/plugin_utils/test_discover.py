# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_discover.py: the volta_server block from the volta_gpu fact.

The GPU read is the real capture of tests/fixtures/nvidia-smi (2x H200 on NVLink, driver 580, open
kernel module) parsed by _gpu_facts, and V100 stand-ins in the same format.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import build_facts, empty_facts
from ansible_collections.volta.serving.plugins.plugin_utils._discover import compare, discover, ram_gb

CAPTURE = Path(__file__).resolve().parents[4] / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"
MEMINFO = "MemTotal:       263518684 kB\nMemFree:        1000 kB\nMemAvailable:   2000 kB\n"


def capture_facts():
    read = {name: (CAPTURE / name).read_text() for name in ("query-noheader.csv", "topo.txt", "proc-version.txt")}
    return build_facts(0, read["query-noheader.csv"], 0, read["topo.txt"], read["proc-version.txt"])


def v100_facts(name, count, mib, nvlinked=(), names=None):
    """A volta_gpu fact of V100s, from nvidia-smi text in the capture's format."""
    query = "".join(
        f"{i}, 00000000:{0x18 + i:02X}:00.0, {(names or {}).get(i, name)}, GPU-00000000-0000-0000-0000-{i:012d}, "
        f"7.0, {mib}, 580.95.05, Enabled\n" for i in range(count))
    link = {frozenset(pair) for pair in nvlinked}
    header = "\t\x1b[4m" + "\t".join(f"GPU{i}" for i in range(count)) + "\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
    rows = "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else "NV2" if frozenset((i, j)) in link else "SYS"
                                for j in range(count)) + "\t0-31\t0\n" for i in range(count))
    proc = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build  (dvs-builder@U16-I3-B13-4-3)\n"
    return build_facts(0, query, 0, header + rows + "\nLegend:\n", proc)


def test_the_real_capture_gives_its_block():
    out = discover("gpu01", capture_facts(), MEMINFO)
    assert out["read"] is True
    assert out["volta_server"] == {"gpu_model": "NVIDIA H200", "gpu_count": 2, "compute_capability": "9.0",
                                   "nvlink_islands": [[0, 1]], "ram_gb": 251}
    assert yaml.safe_load(out["block"]) == {"volta_server": out["volta_server"]}
    block = out["block"]
    assert block.startswith("# gpu01: read by volta.serving.discover; paste into host_vars/gpu01.yml\n")
    assert "# driver 580.159.04, loaded 580.159.04 (open kernel module)\n" in block
    assert "# memory per GPU (nvidia-smi memory.total): 140.4 GiB (143771 MiB)\n" in block
    assert "compute capability 9.0, not 7.0 (Volta, V100)" in block
    assert '  compute_capability: "9.0"\n' in block
    assert "  nvlink_islands: [[0, 1]]  # " in block
    assert all(len(line) <= 110 for line in block.splitlines())


# (id, volta_gpu fact, the volta_server expected, texts in the notes)
V100_CASES = [
    ("pcie-16gb", v100_facts("Tesla V100-PCIE-16GB", 4, 16160),
     {"gpu_model": "Tesla V100-PCIE-16GB", "gpu_count": 4, "compute_capability": "7.0", "nvlink_islands": []},
     ["memory per GPU (nvidia-smi memory.total): 15.8 GiB (16160 MiB)"]),
    ("sxm2-16gb-pairs", v100_facts("Tesla V100-SXM2-16GB", 4, 16160, nvlinked=[(0, 1), (2, 3)]),
     {"gpu_model": "Tesla V100-SXM2-16GB", "gpu_count": 4, "compute_capability": "7.0",
      "nvlink_islands": [[0, 1], [2, 3]]}, ["15.8 GiB"]),
    ("sxm2-32gb-boards", v100_facts("Tesla V100-SXM2-32GB", 10, 32768,
                                    nvlinked=[(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 7), (8, 9)]),
     {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 10, "compute_capability": "7.0",
      "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]}, ["32 GiB (32768 MiB)"]),
    ("mixed", v100_facts("Tesla V100-PCIE-32GB", 2, 32768, names={1: "Tesla V100-PCIE-16GB"}),
     {"gpu_model": "Tesla V100-PCIE-16GB", "gpu_count": 2, "compute_capability": "7.0", "nvlink_islands": []},
     ["GPUs of 2 models (Tesla V100-PCIE-16GB, Tesla V100-PCIE-32GB)"]),
]


@pytest.mark.parametrize(("facts", "server", "texts"), [c[1:] for c in V100_CASES], ids=[c[0] for c in V100_CASES])
def test_v100_hosts(facts, server, texts):
    out = discover("box", facts, MEMINFO)
    assert out["volta_server"] == {**server, "ram_gb": 251}
    assert yaml.safe_load(out["block"]) == {"volta_server": out["volta_server"]}
    for text in texts:
        assert text in " ".join(out["notes"])
    assert not any("not 7.0" in note for note in out["notes"])


@pytest.mark.parametrize(("facts", "pci", "count", "text"), [
    (empty_facts("no_driver", "nvidia-smi was not found"), 4, 4, "(no_driver: nvidia-smi was not found); 4 NVIDIA"),
    (empty_facts("driver_mismatch", "Failed to initialize NVML"), None, None, "an unknown number of NVIDIA"),
    (None, 0, None, "(unknown: no volta_gpu fact); 0 NVIDIA"),
])
def test_a_host_without_a_gpu_read_gets_the_fields_to_fill_in(facts, pci, count, text):
    out = discover("new", facts, MEMINFO, pci_functions=pci)
    assert out["read"] is False
    assert yaml.safe_load(out["block"]) == {"volta_server": {
        "gpu_model": None, "gpu_count": count, "compute_capability": "7.0", "nvlink_islands": [], "ram_gb": 251}}
    assert "  gpu_model:  # FILL IN\n" in out["block"]
    assert text in out["notes"][0]


@pytest.mark.parametrize(("meminfo", "expected"), [
    (MEMINFO, 251),
    ("MemTotal:        2113455424 kB\n", 2015),
    ("MemTotal:        1048575 kB\n", 0),
    ("", None),
    (None, None),
    ("MemFree: 12 kB\n", None),
])
def test_ram_gb_is_what_free_g_prints(meminfo, expected):
    assert ram_gb(meminfo) == expected


def test_without_meminfo_ram_gb_is_left_out():
    out = discover("gpu01", capture_facts())
    assert "ram_gb" not in out["volta_server"]
    assert "ram_gb left out" in out["block"]


@pytest.mark.parametrize(("name", "line"), [
    ("Tesla V100-PCIE-16GB", "  gpu_model: Tesla V100-PCIE-16GB  #"),
    ("GPU: odd # name", '  gpu_model: "GPU: odd # name"  #'),
])
def test_gpu_model_is_quoted_only_when_needed(name, line):
    facts = v100_facts("Tesla V100-PCIE-16GB", 1, 16160)
    facts["gpus"][0]["name"] = name
    out = discover("box", facts, MEMINFO)
    assert line in out["block"]
    assert yaml.safe_load(out["block"])["volta_server"]["gpu_model"] == name


READ = {"gpu_model": "Tesla V100-PCIE-16GB", "gpu_count": 4, "compute_capability": "7.0", "nvlink_islands": [],
        "ram_gb": 251}


@pytest.mark.parametrize(("current", "expected"), [
    (None, None),
    ([], None),
    (dict(READ), "the inventory's volta_server says the same"),
    ({**READ, "compute_capability": 7.0}, "the inventory's volta_server says the same"),
    ({**READ, "gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8},
     "the inventory's volta_server differs: gpu_model 'Tesla V100-PCIE-32GB' (inventory) against "
     "'Tesla V100-PCIE-16GB' (read); gpu_count 8 (inventory) against 4 (read)"),
    ({**READ, "nvlink_islands": [[1, 0]]}, "differs: nvlink_islands [[1, 0]] (inventory) against [] (read)"),
    ({k: v for k, v in READ.items() if k != "ram_gb"}, "differs: ram_gb None (inventory) against 251 (read)"),
])
def test_the_inventory_s_volta_server_is_compared(current, expected):
    note = compare(current, READ)
    assert note == expected or (expected and expected in note)


def test_the_comparison_is_a_note_of_the_block():
    out = discover("box", v100_facts("Tesla V100-PCIE-16GB", 4, 16160), MEMINFO,
                   current={**READ, "gpu_count": 8})
    assert "# the inventory's volta_server differs: gpu_count 8 (inventory) against 4 (read)\n" in out["block"]
