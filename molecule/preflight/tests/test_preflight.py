"""Verify the lab host against the simulated GPU profile it was given.

Expected values come from the profile definitions (the scenario's volta_server), not
from the code under test.
"""

import json

import pytest

PROFILES = {
    "preflight-sxm2": {
        "name": "Tesla V100-SXM2-32GB",
        "count": 10,
        "islands": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
        "pcie_only": False,
        "utils": ("nvidia-utils-580-server", "nvidia-driver-580-server", "-0ubuntu0.24.04.1"),
    },
    "preflight-pcie": {
        "name": "Tesla V100-PCIE-32GB",
        "count": 8,
        "islands": [],
        "pcie_only": True,
        # NVIDIA's debian12 repository: Debian's names, versions <upstream>-1
        "utils": ("nvidia-smi", "nvidia-driver-cuda", "-1"),
    },
}
DRIVER = "580.95.05"


@pytest.fixture
def profile(host):
    return PROFILES[host.backend.get_hostname()]


def test_driver_standin_installed_from_signed_repo(host, profile):
    utils, driver, revision = profile["utils"]
    pkg = host.package(utils)
    assert pkg.is_installed
    assert pkg.version == "580.95.05" + revision
    policy = host.check_output(f"apt-cache policy {driver}")
    assert "580.105.08" + revision in policy
    assert "580.95.05" + revision in policy
    assert "volta-lab-repo:8080/cuda/" in policy


def test_nvidia_smi_lists_profile_gpus(host, profile):
    out = host.check_output("nvidia-smi --query-gpu=index,name,compute_cap --format=csv,noheader")
    rows = [line.split(", ") for line in out.splitlines()]
    assert [int(r[0]) for r in rows] == list(range(profile["count"]))
    assert {r[1] for r in rows} == {profile["name"]}
    assert {r[2] for r in rows} == {"7.0"}


def test_gpu_facts_module_reads_the_host(host, profile):
    result = host.ansible(
        "volta.serving.gpu_facts",
        "proc_version_path=/var/lib/volta-lab/driver/version",
        check=True,
    )
    facts = result["ansible_facts"]["volta_gpu"]
    assert facts["status"] == "ok", json.dumps(facts)
    assert facts["gpu_count"] == profile["count"]
    assert facts["nvlink_islands"] == profile["islands"]
    assert facts["pcie_only"] is profile["pcie_only"]
    assert facts["driver_version"] == DRIVER
    assert facts["loaded_driver_version"] == DRIVER
    assert facts["kernel_module"] == "proprietary"
