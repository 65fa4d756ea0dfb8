# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _preflight_report: the lines preflight reports of a host's GPUs, platform and plan rules."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import preflight_report as plugin

GPU = {"status": "ok", "gpu_count": 8, "gpus": [{"name": "Tesla V100-SXM2-32GB"}], "min_compute_capability": "7.0",
       "driver_version": "570.172.08", "loaded_driver_version": "570.172.08",
       "nvlink_islands": [[0, 1, 2, 3], [4, 5, 6, 7]], "message": ""}  # fmt: skip


@pytest.mark.parametrize(("gpu", "want"), [
    (GPU, "8 x Tesla V100-SXM2-32GB, compute 7.0, driver 570.172.08 (loaded 570.172.08), "
     "NVLink islands [[0, 1, 2, 3], [4, 5, 6, 7]]"),
    ({**GPU, "gpu_count": "2", "nvlink_islands": [], "loaded_driver_version": None},
     "2 x Tesla V100-SXM2-32GB, compute 7.0, driver 570.172.08 (loaded None), NVLink islands []"),
    ({"status": "no_driver", "message": "nvidia-smi not found"},
     "GPUs not readable yet (no_driver): nvidia-smi not found"),
    ({"status": "timeout", "message": "nvidia-smi did not answer in 30 s"},
     "GPUs not readable yet (timeout): nvidia-smi did not answer in 30 s"),
])
def test_gpu_text(gpu, want):
    assert plugin.preflight_gpu_text(gpu) == want


@pytest.mark.parametrize(("platform", "want"), [
    ({"distribution": "Ubuntu", "version": "24.04", "glibc": "glibc 2.39", "note": ""}, "Ubuntu 24.04, glibc 2.39"),
    ({"distribution": None, "version": None, "glibc": None, "note": "controller only"},
     "None None, glibc not read: controller only"),
    ({"distribution": "Debian", "version": "12", "glibc": "", "note": "getconf failed: x"},
     "Debian 12, glibc not read: getconf failed: x"),
])
def test_platform_text(platform, want):
    assert plugin.preflight_platform_text(platform) == want


@pytest.mark.parametrize(("glibc", "detect", "want"), [
    ({}, False, "controller only (volta_preflight_detect=false): the host was not contacted"),
    ({"rc": 1, "stderr": "boom"}, False, "controller only (volta_preflight_detect=false): the host was not contacted"),
    ({}, True, ""),
    ({"rc": 0, "stdout": "glibc 2.39"}, True, ""),
    ({"rc": 127, "stderr": " getconf: not found \n"}, True, "getconf GNU_LIBC_VERSION failed: getconf: not found"),
    ({"rc": 2, "stderr": ""}, True, "getconf GNU_LIBC_VERSION failed: rc 2"),
    (None, True, ""),
])
def test_platform_note(glibc, detect, want):
    assert plugin.preflight_platform_note(glibc, detect, ["getconf", "GNU_LIBC_VERSION"]) == want


@pytest.mark.parametrize(("skipped", "want"), [
    ([], "every rule ran"),
    (None, "every rule ran"),
    (["gpu-facts-mismatch (GPUs not read)"], "not run (1): gpu-facts-mismatch (GPUs not read)"),
    (["a", "b"], "not run (2): a; b"),
])
def test_skipped_text(skipped, want):
    assert plugin.preflight_skipped_text(skipped) == want
