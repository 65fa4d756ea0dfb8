# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _driver_checks: nvidia_driver's settings check, the drift and the verify step's decision."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import driver_verify as flt
from ansible_collections.volta.serving.plugins.plugin_utils import _driver_checks as dc

NOBLE = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_major_version": "24"}
BOOKWORM = {"distribution": "Debian", "distribution_version": "12.11", "distribution_major_version": "12"}
FOCAL = {"distribution": "Ubuntu", "distribution_version": "20.04", "distribution_major_version": "20"}
ROCKY = {"distribution": "Rocky", "distribution_version": "9.4", "distribution_major_version": "9"}
OS_MSG = ("h1: {} is not supported. Why: the driver packages exist for Ubuntu 22.04/24.04 and Debian 12 only. "
          "Fix: run volta.serving.nvidia_driver on one of those.")
VERSION_MSG = ('h1: nvidia_driver_version {} is not a version of branch 580. Why: the version pin and the branch must '
               'agree. Fix: set nvidia_driver_version to "" or to a 580.x version such as 580.95.05, or change '
               'nvidia_driver_branch.')


@pytest.mark.parametrize(("facts", "branch", "version", "problems", "expected"), [
    (NOBLE, "580", "", [], ""),
    (BOOKWORM, "580", "580.95.05", [], ""),
    (NOBLE, "580", "580.95.05-0ubuntu0.24.04.1", [], ""),
    (NOBLE, 580, "580.105", [], ""),
    # the operating system first, before the other problems
    (FOCAL, "580", "590.1", ["bad"], OS_MSG.format("Ubuntu 20.04")),
    (ROCKY, "580", "", [], OS_MSG.format("Rocky 9.4")),
    ({}, "580", "", [], OS_MSG.format("None None")),
    # then the package set
    (BOOKWORM, "580", "590.1", ["No open modules.", "No headless."],
     "h1 (Debian 12.11): No open modules. No headless."),
    # then the version
    (NOBLE, "580", "590.48.01", [], VERSION_MSG.format("590.48.01")),
    (NOBLE, "580", "580", [], VERSION_MSG.format("580")),
    (NOBLE, "58", "", [], VERSION_MSG.replace("580", "58").format("")),
])
def test_settings_problem(facts, branch, version, problems, expected):
    assert dc.settings_problem(facts, "h1", branch, version, problems) == expected
    assert flt.driver_settings(facts, "h1", branch, version, problems) == expected


GPU_OK = {"status": "ok", "loaded_driver_version": "580.95.05"}


@pytest.mark.parametrize(("installed", "gpu", "pci", "expected"), [
    # the loaded module is the installed driver
    ({"nvidia-driver-580-server": "580.95.05-0ubuntu0.24.04.1"}, GPU_OK, 8, ("580.95.05", "580.95.05", False)),
    # an upgrade installed, the old module still loaded
    ({"nvidia-driver-580-server": "580.105.08-0ubuntu1"}, GPU_OK, 8, ("580.105.08", "580.95.05", True)),
    # installed, no module loaded, a GPU on the bus
    ({"nvidia-driver-580-server": "580.95.05-1"}, {"status": "no_driver", "loaded_driver_version": None}, 2,
     ("580.95.05", "", True)),
    # installed, no module loaded, no GPU (a build host)
    ({"nvidia-driver-580-server": "580.95.05-1"}, {"status": "no_driver"}, 0, ("580.95.05", "", False)),
    # nvidia-smi reports the mismatch itself
    ({"nvidia-driver-580-server": "580.95.05-1"}, {"status": "driver_mismatch", "loaded_driver_version": "580.95.05"},
     1, ("580.95.05", "580.95.05", True)),
    # a driver installed before the role, under another name; an epoch
    ({"libcuda1": "1:580.82.07-1"}, GPU_OK, 1, ("580.82.07", "580.95.05", True)),
    ({"libnvidia-compute-580-server": "580.95.05-0ubuntu1", "nvidia-utils": "1-1"}, GPU_OK, 1,
     ("580.95.05", "580.95.05", False)),
    # nothing installed: no drift, whatever runs
    ({}, GPU_OK, 8, ("", "580.95.05", False)),
    ({"libcuda1-dev": "580.1-1"}, GPU_OK, 8, ("", "580.95.05", False)),
])
def test_drift(installed, gpu, pci, expected):
    keys = ("installed_version", "loaded_version", "drift")
    assert dc.drift(installed, "nvidia-driver-580-server", gpu, pci) == dict(zip(keys, expected, strict=True))
    assert flt.driver_drift(installed, "nvidia-driver-580-server", gpu, pci) == dict(zip(keys, expected, strict=True))


SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 2, "compute_capability": "7.0"}
SMI = {"status": "ok", "message": "2 GPU(s) found", "gpu_count": 2, "driver_version": "580.95.05",
       "gpus": [{"index": 0, "name": "Tesla V100-SXM2-32GB"}, {"index": 1, "name": "Tesla V100-SXM2-32GB"}]}
NO_DRIVER = {"status": "no_driver", "message": "nvidia-smi: not found", "gpus": []}
FIX_CONFIG = "correct volta_server or nvidia_driver_version, or the hardware"


@pytest.mark.parametrize(("gpu", "options", "mode", "issues", "success"), [
    (SMI, {}, "verify", [], "h1: 2 x Tesla V100-SXM2-32GB, driver 580.95.05, persistence mode on"),
    (SMI, {"persistence": False}, "verify", [],
     "h1: 2 x Tesla V100-SXM2-32GB, driver 580.95.05, persistence mode not managed"),
    (SMI, {"version": "580.95.05-0ubuntu0.24.04.1"}, "verify", [], None),
    (SMI, {"version": "580.105.08"}, "verify", ["driver 580.95.05 is not 580.105.08"], None),
    (SMI, {"branch": "590"}, "verify", ["driver 580.95.05 is not on branch 590"], None),
    (SMI, {"server": {**SERVER, "gpu_count": "8"}}, "verify", ["volta_server has 8 GPUs, nvidia-smi lists 2"], None),
    (SMI, {"server": {**SERVER, "gpu_model": "Tesla V100-PCIE-16GB"}}, "verify",
     ["volta_server says Tesla V100-PCIE-16GB, nvidia-smi lists Tesla V100-SXM2-32GB"], None),
    (SMI, {"persistence_off": [0, 1]}, "verify", ["persistence mode is off on GPU 0, 1"], None),
    # check mode reports no persistence issue: it only simulated nvidia-smi -pm 1
    (SMI, {"persistence_off": [0, 1], "check_mode": True}, "verify", [], None),
    # no driver yet in check mode: nothing to verify
    (NO_DRIVER, {"check_mode": True}, "check_mode", ["nvidia-smi reports no_driver: nvidia-smi: not found"],
     "h1: GPU verification skipped: check mode, and the driver is not installed yet"),
    # no GPU on the bus and no driver: nothing to verify
    (NO_DRIVER, {}, "no_gpu", ["nvidia-smi reports no_driver: nvidia-smi: not found"],
     "h1: GPU verification skipped: this host has no NVIDIA PCI function and nvidia-smi finds no driver "
     "(nvidia-smi: not found)"),
    # a GPU on the bus whose driver does not answer fails
    (NO_DRIVER, {"has_pci_gpu": True}, "verify", ["nvidia-smi reports no_driver: nvidia-smi: not found"], None),
    # installed in check mode (a rerun): verified
    ({**NO_DRIVER, "status": "driver_mismatch", "message": "mismatch"},
     {"check_mode": True, "installed_version": "580.1"},
     "verify", ["nvidia-smi reports driver_mismatch: mismatch"], None),
])
def test_verify(gpu, options, mode, issues, success):
    options = {"server": SERVER, "branch": "580", **options}
    result = dc.verify(gpu, "h1", **options)
    assert result == flt.driver_verify(gpu, "h1", **options)
    assert (result["mode"], result["skip"], result["issues"]) == (mode, mode != "verify", issues)
    if success is not None:
        assert result["success_msg"] == success
    assert result["uvm"] == (mode == "verify" and gpu["status"] == "ok" and not options.get("check_mode", False))


def test_verify_failure_names_the_issues_and_the_fix():
    fail = dc.verify(SMI, "h1", server={**SERVER, "gpu_count": 8}, branch="580", version="580.1")["fail_msg"]
    assert fail == ("h1: the driver does not verify: volta_server has 8 GPUs, nvidia-smi lists 2; driver 580.95.05 "
                    f"is not 580.1. Fix: {FIX_CONFIG}.")
    fail = dc.verify(NO_DRIVER, "h1", has_pci_gpu=True)["fail_msg"]
    assert fail == ("h1: the driver does not verify: nvidia-smi reports no_driver: nvidia-smi: not found. "
                    "Fix: install and load the driver (nvidia-smi: nvidia-smi: not found).")


@pytest.mark.parametrize(("facts", "expected"), [
    (NOBLE, True), (BOOKWORM, True), ({**NOBLE, "distribution_version": "22.04"}, True),
    (FOCAL, False), (ROCKY, False), ({"distribution": "Debian", "distribution_major_version": "11"}, False),
    (None, False),
])
def test_os_supported(facts, expected):
    assert dc.os_supported(facts) is expected
