# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.gpu_facts module: main() end to end, through exit_json/fail_json."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import gpu_facts

REPO = Path(__file__).resolve().parents[4]
CAPTURES = REPO / "tests" / "fixtures" / "nvidia-smi" / "h200x2-ubuntu2404-driver580"
SIMULATOR = REPO / "tests" / "lab" / "gpu-sim" / "nvidia-smi"

PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {0}  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Thu Sep 25 04:05:53 UTC 2025\n"
    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04) \n"
)


def capture(name):
    path = CAPTURES / name
    if not path.is_file():
        pytest.fail(f"real nvidia-smi capture missing: {path}")
    return path.read_text(encoding="utf-8")


def run_module(capsys, args):
    """Run gpu_facts.main() with *args*; return (rc, result dict) as Ansible would see them."""
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        gpu_facts.main()
    out = capsys.readouterr().out
    return exc.value.code, json.loads(out)


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A VOLTA_GPU_SIM_ROOT for the simulator; returns a function that sets it up."""
    root = tmp_path / "root"
    monkeypatch.setenv("VOLTA_GPU_SIM_ROOT", str(root))
    monkeypatch.delenv("VOLTA_GPU_SIM_PROFILE", raising=False)

    def setup(profile, library="580.95.05", loaded="580.95.05"):
        (root / "etc/volta-lab").mkdir(parents=True, exist_ok=True)
        (root / "etc/volta-lab/gpu-profile").write_text(profile + "\n")
        (root / "usr/share/volta-lab/gpu-sim").mkdir(parents=True, exist_ok=True)
        (root / "usr/share/volta-lab/gpu-sim/library-version").write_text(library + "\n")
        version = root / "var/lib/volta-lab/driver/version"
        if loaded is not None:
            version.parent.mkdir(parents=True, exist_ok=True)
            version.write_text(PROPRIETARY.format(loaded))
        return {"nvidia_smi": str(SIMULATOR), "proc_version_path": str(version)}

    return setup


EXPECTED = {
    "v100-sxm2-10": (10, "Tesla V100-SXM2-32GB", [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]], False),
    "v100-pcie-8": (8, "Tesla V100-PCIE-32GB", [], True),
}


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("profile", sorted(EXPECTED))
def test_main_with_simulator(capsys, lab, profile, check_mode):
    count, name, islands, pcie_only = EXPECTED[profile]
    args = lab(profile)
    if check_mode:
        args["_ansible_check_mode"] = True
    rc, result = run_module(capsys, args)
    assert rc == 0
    assert result["changed"] is False
    assert "failed" not in result
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "ok"
    assert facts["gpu_count"] == count
    assert [g["index"] for g in facts["gpus"]] == list(range(count))
    assert {g["name"] for g in facts["gpus"]} == {name}
    assert {g["compute_capability"] for g in facts["gpus"]} == {"7.0"}
    assert {g["memory_total_mib"] for g in facts["gpus"]} == {32768}
    assert {g["persistence_mode"] for g in facts["gpus"]} == {False}
    assert facts["nvlink_islands"] == islands
    assert facts["pcie_only"] is pcie_only
    assert facts["driver_version"] == "580.95.05"
    assert facts["loaded_driver_version"] == "580.95.05"
    assert facts["kernel_module"] == "proprietary"
    assert facts["min_compute_capability"] == "7.0"


@pytest.mark.parametrize(
    "library, loaded, status, message, driver, loaded_version",
    [
        ("580.95.05", None, "no_driver",
         ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
          "Make sure that the latest NVIDIA driver is installed and running."), None, None),
        ("580.105.08", "580.95.05", "driver_mismatch",
         "Failed to initialize NVML: Driver/library version mismatch (NVML library version 580.105)",
         "580.105", "580.95.05"),
        ("590.44.01", "590.44.01", "no_devices", "No devices were found", None, "590.44.01"),
    ],
    ids=["no-module", "mismatch", "590-on-volta"],
)
def test_main_driver_states(capsys, lab, *, library, loaded, status, message, driver, loaded_version):
    rc, result = run_module(capsys, lab("v100-sxm2-10", library=library, loaded=loaded))
    assert rc == 0, result
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == status
    assert facts["message"] == message
    assert facts["gpu_count"] == 0 and facts["gpus"] == [] and facts["nvlink_islands"] == []
    assert facts["pcie_only"] is None and facts["min_compute_capability"] is None
    assert facts["driver_version"] == driver
    assert facts["loaded_driver_version"] == loaded_version


def test_main_sees_persistence_set_by_simulator(capsys, lab):
    args = lab("v100-pcie-8")
    done = subprocess.run([sys.executable, str(SIMULATOR), "-i", "0,7", "-pm", "1"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.endswith("All done.\n")
    _rc, result = run_module(capsys, args)
    modes = [g["persistence_mode"] for g in result["ansible_facts"]["volta_gpu"]["gpus"]]
    assert modes == [True, False, False, False, False, False, False, True]


@pytest.mark.parametrize("nvidia_smi", ["/nonexistent/bin/nvidia-smi", "nvidia-smi-not-installed-anywhere"])
def test_main_without_nvidia_smi(capsys, tmp_path, monkeypatch, nvidia_smi):
    monkeypatch.setenv("PATH", str(tmp_path))
    proc = tmp_path / "version"
    proc.write_text(PROPRIETARY.format("580.95.05"))
    rc, result = run_module(capsys, {"nvidia_smi": nvidia_smi, "proc_version_path": str(proc)})
    assert rc == 0
    assert "exception" not in result and "failed" not in result
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "no_driver"
    assert facts["message"] == f"{nvidia_smi} was not found"
    assert facts["gpu_count"] == 0
    assert facts["loaded_driver_version"] == "580.95.05"
    assert facts["kernel_module"] == "proprietary"


def test_main_not_executable_is_no_driver(capsys, tmp_path):
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(stat.S_IRUSR | stat.S_IWUSR)
    rc, result = run_module(capsys, {"nvidia_smi": str(fake), "proc_version_path": str(tmp_path / "absent")})
    assert rc == 0
    assert result["ansible_facts"]["volta_gpu"]["status"] == "no_driver"
    assert result["ansible_facts"]["volta_gpu"]["loaded_driver_version"] is None


class FakeRunner:
    """Replaces AnsibleModule.run_command: answers by sub-command, records the calls."""

    def __init__(self, query, topo=(0, "", "")):
        self.answers = {"query": query, "topo": topo}
        self.calls = []

    def __call__(self, cmd):
        self.calls.append(list(cmd))
        return self.answers["topo" if "topo" in cmd else "query"]


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    binary = tmp_path / "nvidia-smi"
    binary.write_text("#!/bin/sh\nexit 99\n")
    binary.chmod(0o755)

    def install(runner):
        def fake_run_command(_module, cmd, **_kwargs):
            return runner(cmd)

        monkeypatch.setattr(basic.AnsibleModule, "run_command", fake_run_command)
        return str(binary)

    return install


def test_main_on_real_capture(capsys, fake_smi):
    runner = FakeRunner((0, capture("query-noheader.csv"), ""), (0, capture("topo.txt"), ""))
    args = {"nvidia_smi": fake_smi(runner), "proc_version_path": str(CAPTURES / "proc-version.txt")}
    rc, result = run_module(capsys, args)
    assert rc == 0
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "ok"
    assert facts["gpu_count"] == 2
    assert facts["gpus"][1] == {
        "index": 1,
        "pci_bus_id": "00000000:00:07.0",
        "name": "NVIDIA H200",
        "uuid": "GPU-00000000-0000-0000-0000-000000000001",
        "compute_capability": "9.0",
        "memory_total_mib": 143771,
        "driver_version": "580.159.04",
        "persistence_mode": True,
    }
    assert facts["nvlink_islands"] == [[0, 1]]
    assert facts["pcie_only"] is False
    assert facts["kernel_module"] == "open"
    assert facts["loaded_driver_version"] == facts["driver_version"] == "580.159.04"
    assert facts["min_compute_capability"] == "9.0"
    # Each call runs under timeout(1) with the default 30 s: timeout --kill-after=5 30 nvidia-smi ARGS.
    assert runner.calls[0][1:3] == ["--kill-after=5", "30"]
    assert runner.calls[0][-2:] == [
        "--query-gpu=index,pci.bus_id,name,uuid,compute_cap,memory.total,driver_version,persistence_mode",
        "--format=csv,noheader,nounits",
    ]
    assert runner.calls[1][-2:] == ["topo", "-m"]


@pytest.mark.parametrize(
    "query, topo, quoted",
    [
        ((0, "0, 00000000:18:00.0, Tesla V100, oops\n", ""), None, "0, 00000000:18:00.0, Tesla V100, oops"),
        ((0, ("0, 00000000:00:06.0, NVIDIA H200, GPU-00000000-0000-0000-0000-000000000000, "
              "9.0, 143771, 580.159.04, Enabled\n"), ""),
         (0, "\t\x1b[4mGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t ? \t0-31\t0\t\tN/A\n", ""),
         "GPU0\t ? \t0-31\t0\t\tN/A"),
        ((3, "", "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error\n"), None,
         "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error"),
    ],
    ids=["query-garbage", "topo-garbage", "unknown-error"],
)
def test_main_garbage_fails_quoting_line(capsys, fake_smi, tmp_path, *, query, topo, quoted):
    runner = FakeRunner(query, topo or (0, "", ""))
    rc, result = run_module(capsys, {"nvidia_smi": fake_smi(runner), "proc_version_path": str(tmp_path / "absent")})
    assert rc == 1
    assert result["failed"] is True
    assert repr(quoted) in result["msg"]


def test_main_garbage_proc_version_fails(capsys, fake_smi, tmp_path):
    proc = tmp_path / "version"
    proc.write_text("this is not the nvidia version file\n")
    runner = FakeRunner((9, "", ""))
    rc, result = run_module(capsys, {"nvidia_smi": fake_smi(runner), "proc_version_path": str(proc)})
    assert rc == 1
    assert repr("this is not the nvidia version file") in result["msg"]


@pytest.mark.parametrize(
    "query, status",
    [
        ((6, "No devices were found\n", ""), "no_devices"),
        ((9, "", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure"),
         "no_driver"),
        ((18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n", ""),
         "driver_mismatch"),
    ],
)
def test_main_failure_runs_no_topology(capsys, fake_smi, tmp_path, query, status):
    runner = FakeRunner(query)
    rc, result = run_module(capsys, {"nvidia_smi": fake_smi(runner), "proc_version_path": str(tmp_path / "absent")})
    assert rc == 0
    assert result["ansible_facts"]["volta_gpu"]["status"] == status
    assert len(runner.calls) == 1, "topo -m must not run when the query found no GPU"


# A hung driver: nvidia-smi never answers. A real script that sleeps, run for real (no fake runner).
HUNG = """#!/bin/sh
case "$*" in
  *--query-gpu*) {query} ;;
  *) sleep 30 ;;
esac
"""


@pytest.mark.parametrize(
    ("query", "hung_args"),
    [("sleep 30", ["--query-gpu"]), ("cat {capture}", ["topo", "-m"])],
    ids=["query-hangs", "topo-hangs"],
)
def test_hung_nvidia_smi_times_out_with_the_command(capsys, tmp_path, query, hung_args):
    binary = tmp_path / "nvidia-smi"
    binary.write_text(HUNG.format(query=query.format(capture=CAPTURES / "query-noheader.csv")))
    binary.chmod(0o755)
    args = {"nvidia_smi": str(binary), "proc_version_path": str(tmp_path / "absent"), "timeout": 1}
    rc, result = run_module(capsys, args)
    assert rc == 0, result
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "timeout"
    assert facts["command"][0] == str(binary)
    assert facts["command"][1].startswith(hung_args[0])
    assert facts["message"].startswith(f"{binary} {hung_args[0]}")
    assert facts["message"].endswith("did not answer within 1 s (a hung driver or GPU?)")
    assert facts["gpu_count"] == 0


def test_negative_timeout_is_refused(capsys, tmp_path):
    rc, result = run_module(capsys, {"nvidia_smi": str(tmp_path / "x"), "timeout": -1})
    assert rc == 1
    assert result["msg"] == "timeout -1 is negative: give seconds, or 0 for no limit."


def test_host_reads_secure_boot_pci_and_paths(capsys, tmp_path, monkeypatch):
    """The reads beside the fact: mokutil's answer, NVIDIA PCI functions, a device node and a missing key."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mokutil = bindir / "mokutil"
    mokutil.write_text('#!/bin/sh\n[ "$1" = --sb-state ] && echo "SecureBoot enabled"\n')
    mokutil.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(gpu_facts.glob, "glob", lambda _p: [str(tmp_path / "vendor-nv"), str(tmp_path / "vendor-x")])
    (tmp_path / "vendor-nv").write_text("0x10de\n")
    (tmp_path / "vendor-x").write_text("0x8086\n")
    rc, result = run_module(capsys, {"nvidia_smi": "/nonexistent/nvidia-smi", "pci_vendor": "0x10de",
                                     "secure_boot": True, "paths": ["/dev/null", str(tmp_path / "no-key")],
                                     "proc_version_path": str(tmp_path / "none")})
    assert rc == 0
    assert result["secure_boot"] == "SecureBoot enabled"
    assert result["pci_functions"] == 1
    assert result["paths"] == {"/dev/null": {"exists": True, "ischr": True},
                               str(tmp_path / "no-key"): {"exists": False, "ischr": False}}


def test_host_reads_without_mokutil_and_by_default(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    real = gpu_facts.AnsibleModule.get_bin_path
    monkeypatch.setattr(gpu_facts.AnsibleModule, "get_bin_path",
                        lambda self, name, **kw: None if name == "mokutil" else real(self, name, **kw))
    _rc, result = run_module(capsys, {"nvidia_smi": "/nonexistent/nvidia-smi", "secure_boot": True,
                                      "proc_version_path": str(tmp_path / "none")})
    assert result["secure_boot"] == "not checked (mokutil is not installed)"
    assert "pci_functions" not in result and result["paths"] == {}
    assert "glibc" not in result


def test_glibc_command_runs_in_the_same_call(capsys, tmp_path):
    base = {"nvidia_smi": "/nonexistent/nvidia-smi", "proc_version_path": str(tmp_path / "none")}
    # This machine's real getconf, the role's default command.
    _rc, result = run_module(capsys, {**base, "glibc_command": ["getconf", "GNU_LIBC_VERSION"],
                                      "_ansible_check_mode": True})
    assert result["glibc"]["rc"] == 0 and result["glibc"]["stdout"].startswith("glibc 2.")
    assert result["ansible_facts"]["volta_gpu"]["status"] == "no_driver"
    _rc, result = run_module(capsys, {**base, "glibc_command": ["/nonexistent/getconf", "GNU_LIBC_VERSION"]})
    assert result["glibc"]["rc"] == 127 and result["glibc"]["stdout"] == ""
    assert result["glibc"]["stderr"].startswith("/nonexistent/getconf: No such file")
    _rc, result = run_module(capsys, {**base, "glibc_command": ["getconf", "NO_SUCH_VARIABLE"]})
    assert result["glibc"]["rc"] != 0 and "NO_SUCH_VARIABLE" in result["glibc"]["stderr"]
