# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _host_rules: the GPU source and the Volta refusals of the driver and toolkit roles."""

from __future__ import annotations

import yaml
from ansible_collections.volta.serving.plugins.filter import host_refusals as flt
from ansible_collections.volta.serving.plugins.plugin_utils import _host_rules as hr

SERVER = {"gpu_model": "Tesla V100-SXM2-32GB", "gpu_count": 10, "compute_capability": "7.0"}
FACTS_OK = {"status": "ok", "gpus": [
    {"index": 0, "name": "Tesla V100-PCIE-32GB", "compute_capability": "7.0"},
    {"index": 1, "name": "Tesla V100-PCIE-32GB", "compute_capability": "7.0"}]}
FACTS_T4 = {"status": "ok", "gpus": [{"index": 0, "name": "Tesla T4", "compute_capability": "7.5"}]}
NO_DRIVER = {"status": "no_driver", "gpus": []}


def test_gpu_source_prefers_nvidia_smi():
    gpus, source = hr.gpu_source(FACTS_OK, SERVER)
    assert source == "nvidia-smi"
    assert [g["name"] for g in gpus] == ["Tesla V100-PCIE-32GB"] * 2
    assert gpus[0]["source"] == "nvidia-smi"


def test_gpu_source_falls_back_to_volta_server():
    gpus, source = hr.gpu_source(NO_DRIVER, SERVER)
    assert source == "volta_server"
    assert gpus == [{"index": "all", "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0",
                     "source": "volta_server"}]


def test_gpu_source_without_either_is_none():
    assert hr.gpu_source(None, None) == ([], "none")
    assert hr.gpu_source(NO_DRIVER, {"gpu_model": "x"}) == ([], "none")


def test_numeric_compute_capability_of_the_inventory_is_a_string():
    gpus, source = hr.gpu_source({}, {"gpu_model": "V100", "compute_capability": 7.0})
    assert source == "volta_server"
    assert gpus[0]["compute_capability"] == "7.0"


def test_branch_590_refused_on_volta_from_the_inventory():
    msg = hr.host_refusals(NO_DRIVER, SERVER, "h1", driver_branch="590")["refusals"]["driver_branch"]
    assert msg.startswith("h1: refusing driver branch 590 for GPU all Tesla V100-SXM2-32GB "
                          "(compute capability 7.0, from volta_server).")
    assert "580 is the last driver branch that supports Volta" in msg
    assert msg.endswith('Fix: set nvidia_driver_branch to "580".')


def test_branch_580_and_turing_are_not_refused():
    assert hr.host_refusals(NO_DRIVER, SERVER, "h1", driver_branch="580")["refusals"]["driver_branch"] == ""
    assert hr.host_refusals(FACTS_T4, SERVER, "h1", driver_branch="590")["refusals"]["driver_branch"] == ""


def test_open_modules_refused_on_volta_only():
    msg = hr.host_refusals(FACTS_OK, {}, "h1", kernel_module="open")["refusals"]["kernel_module"]
    assert msg.startswith("h1: refusing the -open kernel module packages for GPU 0 Tesla V100-PCIE-32GB")
    assert "support Turing (7.5) and newer only" in msg
    assert hr.host_refusals(FACTS_OK, {}, "h1", kernel_module="proprietary")["refusals"]["kernel_module"] == ""
    assert hr.host_refusals(FACTS_T4, {}, "h1", kernel_module="open")["refusals"]["kernel_module"] == ""


def test_cuda_13_refused_with_the_nvcc_error():
    msg = hr.host_refusals(FACTS_OK, {}, "h1", cuda_version="13.0")["refusals"]["cuda_toolkit"]
    assert msg.startswith("h1: refusing CUDA 13.0 for GPU 0 Tesla V100-PCIE-32GB (compute capability 7.0,")
    assert "Unsupported gpu architecture 'compute_70'" in msg
    assert msg.endswith('Fix: set cuda_toolkit_version to "12.8".')
    assert hr.host_refusals(FACTS_OK, {}, "h1", cuda_version="12.8")["refusals"]["cuda_toolkit"] == ""


def test_settings_not_given_refuse_nothing():
    refusals = hr.host_refusals(FACTS_OK, SERVER, "h1")["refusals"]
    assert refusals == {"driver_branch": "", "kernel_module": "", "cuda_toolkit": ""}


def test_no_gpu_refuses_nothing_and_names_placeholders():
    found = hr.host_refusals({}, {}, "h1", driver_branch="590", kernel_module="open", cuda_version="13.0")
    assert set(found["refusals"].values()) == {""}
    assert found["first"] == hr.NO_GPU


def test_filter_entry_point_and_docs():
    assert flt.FilterModule().filters() == {"host_refusals": flt.host_refusals}
    assert yaml.safe_load(flt.DOCUMENTATION)["name"] == "host_refusals"
    found = flt.host_refusals(NO_DRIVER, "h1", server=SERVER, driver_branch=590)
    assert "refusing driver branch 590" in found["refusals"]["driver_branch"]
