# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _driver_packages: the driver's package names per distribution."""

from __future__ import annotations

import re

import pytest
import yaml
from ansible_collections.volta.serving.plugins.filter import driver_installed, driver_packages
from ansible_collections.volta.serving.plugins.module_utils import _driver_packages as dp

# Every binary package of Debian's nvidia-graphics-drivers source in bookworm (535.261.03-1), recorded
# from deb.debian.org/debian/dists/bookworm/non-free{,-firmware}/binary-amd64/Packages.xz (2026-11-30).
DEBIAN_BINARIES = [
    "firmware-nvidia-gsp", "libcuda1", "libcudadebugger1", "libegl-nvidia0", "libgl1-nvidia-glvnd-glx",
    "libgles-nvidia1", "libgles-nvidia2", "libglx-nvidia0", "libnvcuvid1", "libnvidia-allocator1",
    "libnvidia-api1", "libnvidia-cfg1", "libnvidia-eglcore", "libnvidia-encode1", "libnvidia-fbc1",
    "libnvidia-glcore", "libnvidia-glvkspirv", "libnvidia-ml1", "libnvidia-ngx1", "libnvidia-nvvm4",
    "libnvidia-opticalflow1", "libnvidia-pkcs11-openssl3", "libnvidia-ptxjitcompiler1", "libnvidia-rtcore",
    "libnvoptix1", "nvidia-alternative", "nvidia-cuda-mps", "nvidia-detect", "nvidia-driver", "nvidia-driver-bin",
    "nvidia-driver-full", "nvidia-driver-libs", "nvidia-egl-common", "nvidia-egl-icd", "nvidia-kernel-dkms",
    "nvidia-kernel-source", "nvidia-kernel-support", "nvidia-legacy-check", "nvidia-libopencl1",
    "nvidia-opencl-common", "nvidia-opencl-icd", "nvidia-powerd", "nvidia-smi", "nvidia-suspend-common",
    "nvidia-vdpau-driver", "nvidia-vulkan-common", "nvidia-vulkan-icd", "xserver-xorg-video-nvidia",
]
# Binary packages of Ubuntu's nvidia-graphics-drivers-580-server and linux-restricted-modules (noble-updates
# restricted, 580.178.04-0ubuntu0.24.04.1 / 6.8.0-151.151, recorded 2026-11-30).
UBUNTU_BINARIES = [
    "libnvidia-cfg1-580-server", "libnvidia-common-580-server", "libnvidia-compute-580-server",
    "libnvidia-decode-580-server", "libnvidia-encode-580-server", "libnvidia-extra-580-server",
    "libnvidia-fbc1-580-server", "libnvidia-gl-580-server", "nvidia-compute-utils-580-server",
    "nvidia-dkms-580-server", "nvidia-driver-580-server", "nvidia-firmware-580-server-580.178.04",
    "nvidia-headless-no-dkms-580-server", "nvidia-kernel-common-580-server", "nvidia-kernel-source-580-server",
    "nvidia-utils-580-server", "xserver-xorg-video-nvidia-580-server",
    "linux-modules-nvidia-580-server-6.8.0-151-generic", "linux-modules-nvidia-580-server-generic",
    "linux-objects-nvidia-580-server-6.8.0-151-generic", "linux-signatures-nvidia-6.8.0-151-generic",
]


def _held(name, plan, source=""):
    return dp.is_driver_package(name, source, plan["hold_patterns"], plan["hold_sources"])


@pytest.mark.parametrize(("headless", "module", "expected"), [
    (True, "proprietary", ["nvidia-driver-cuda", "nvidia-kernel-dkms"]),
    (True, "open", ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"]),
    (False, "proprietary", ["nvidia-driver-cuda", "nvidia-driver", "nvidia-kernel-dkms"]),
])
def test_debian_uses_the_debian_names(headless, module, expected):
    plan = dp.plan("Debian", "580", headless=headless, kernel_module=module, source="cuda")
    assert plan["packages"] == expected
    assert plan["main_package"] == "nvidia-driver-cuda"
    assert plan["module_packages"] == [] and plan["needs_dkms"] is True
    assert not any("-580-server" in name for name in plan["packages"])


def test_debian_holds_every_binary_of_the_driver_source_by_name_alone():
    plan = dp.plan("Debian", "580", source="cuda")
    missed = [name for name in DEBIAN_BINARIES if not _held(name, plan)]
    assert missed == []
    assert not _held("libcudart12", plan) and not _held("libcublas12", plan)


def test_debian_pin_is_nvidias_source_package_form():
    plan = dp.plan("Debian", "580", source="cuda")
    assert plan["pin_packages"] == "src:*nvidia*:any src:cuda-drivers:any"
    assert plan["hold_sources"] == ["*nvidia*", "cuda-drivers"]


@pytest.mark.parametrize(("headless", "source", "expected"), [
    (False, "dkms", ["nvidia-driver-580-server"]),
    (True, "dkms", ["nvidia-headless-580-server", "nvidia-utils-580-server"]),
    (False, "precompiled", ["nvidia-driver-580-server"]),
    (True, "precompiled", ["nvidia-headless-no-dkms-580-server", "nvidia-utils-580-server"]),
])
def test_ubuntu_names(headless, source, expected):
    plan = dp.plan("Ubuntu", "580", headless=headless, module_source=source, kernel_release="6.8.0-151-generic")
    assert plan["packages"] == expected
    assert plan["main_package"] == expected[0]
    assert plan["needs_dkms"] is (source == "dkms")


def test_ubuntu_precompiled_modules_name_the_running_kernel_and_the_flavour():
    plan = dp.plan("Ubuntu", "580", module_source="precompiled", kernel_release="6.8.0-151-generic",
                   flavour="generic-hwe-24.04")
    assert plan["module_packages"] == ["linux-modules-nvidia-580-server-6.8.0-151-generic",
                                       "linux-modules-nvidia-580-server-generic-hwe-24.04"]
    open_plan = dp.plan("Ubuntu", "580", kernel_module="open", module_source="precompiled",
                        kernel_release="6.8.0-151-generic", flavour="")
    assert open_plan["module_packages"] == ["linux-modules-nvidia-580-server-open-6.8.0-151-generic"]
    assert open_plan["packages"] == ["nvidia-driver-580-server-open"]


def test_ubuntu_holds_the_x_driver_and_the_precompiled_modules_but_pins_no_kernel_package():
    plan = dp.plan("Ubuntu", "580", module_source="precompiled", kernel_release="6.8.0-151-generic")
    assert [name for name in UBUNTU_BINARIES if not _held(name, plan)] == []
    assert not _held("linux-image-6.8.0-151-generic", plan)
    assert "linux-" not in plan["pin_packages"]
    expected = ["nvidia-*", "libnvidia-*", "cuda-drivers*", "xserver-xorg-video-nvidia-580-server*"]
    assert plan["pin_packages"].split() == expected


def test_blacklist_regexes_match_what_the_holds_match():
    for distribution, names in (("Debian", DEBIAN_BINARIES), ("Ubuntu", UBUNTU_BINARIES)):
        plan = dp.plan(distribution, "580", kernel_release="6.8.0-151-generic")
        regexes = [re.compile(r) for r in plan["blacklist_regexes"]]
        assert [n for n in names if not any(r.search(n) for r in regexes)] == []
        assert not any(r.search("linux-image-6.8.0-151-generic") for r in regexes)


@pytest.mark.parametrize(("distribution", "source", "module_source", "message"), [
    ("Debian", "cuda", "precompiled", "precompiled is not available on Debian"),
    ("Ubuntu", "cuda", "precompiled", "needs nvidia_driver_source ubuntu"),
    ("Ubuntu", "ubuntu", "signed", "'signed' is not one of dkms, precompiled"),
])
def test_impossible_combinations_are_explained(distribution, source, module_source, message):
    found = dp.plan(distribution, "580", source=source, module_source=module_source)["problems"]
    assert len(found) == 1 and message in found[0] and "Fix:" in found[0]


def test_precompiled_full_driver_needs_the_flavour_that_provides_nvidia_dkms():
    found = dp.plan("Ubuntu", "580", module_source="precompiled", flavour="")["problems"]
    assert len(found) == 1 and "needs nvidia_driver_precompiled_flavour" in found[0]
    assert dp.plan("Ubuntu", "580", headless=True, module_source="precompiled", flavour="")["problems"] == []


def test_valid_combinations_have_no_problems():
    assert dp.plan("Ubuntu", "580", module_source="precompiled")["problems"] == []
    assert dp.plan("Debian", "580", source="cuda")["problems"] == []


def test_installed_reads_dpkg_rows_by_name_or_source():
    rows = [
        "libcuda1 580.95.05-1 hold installed nvidia-graphics-drivers",
        "nvidia-persistenced 580.95.05-1 install installed nvidia-persistenced",
        "libfoo1 1.0 install installed foo",
        "nvidia-smi 580.95.05-1 deinstall config-files nvidia-graphics-drivers",
        "odd-one 1.0 install installed nvidia-graphics-drivers:amd64",
        "short line",
    ]
    found = dp.installed(rows, ["nvidia-*"], ["*nvidia*"])
    assert found == {"installed": {"libcuda1": "580.95.05-1", "nvidia-persistenced": "580.95.05-1",
                                   "odd-one": "1.0"},
                     "held": ["libcuda1"]}
    assert dp.installed(rows, ["nvidia-*"])["installed"] == {"nvidia-persistenced": "580.95.05-1"}


def test_filters_are_registered_under_their_documented_names():
    assert driver_packages.FilterModule().filters() == {"driver_packages": driver_packages.driver_packages}
    assert yaml.safe_load(driver_packages.DOCUMENTATION)["name"] == "driver_packages"
    assert driver_installed.FilterModule().filters() == {"driver_installed": driver_installed.driver_installed}
    assert yaml.safe_load(driver_installed.DOCUMENTATION)["name"] == "driver_installed"
    plan = driver_packages.driver_packages("Debian", 580, headless="yes")
    assert plan["packages"] == ["nvidia-driver-cuda", "nvidia-kernel-dkms"]
