"""The refusals happened before any change: no package, no source, no file of the role."""

import pytest


def test_no_driver_package_installed(host):
    out = host.run("dpkg-query -W -f='${Package} ${db:Status-Status}\\n' 'nvidia-*' 'libnvidia-*' 'cuda-*'").stdout
    assert [line for line in out.splitlines() if line.endswith(" installed")] == []


def test_repository_tooling_not_installed(host):
    # the first change the CUDA-repository path makes is installing python3-debian
    assert not host.package("python3-debian").is_installed
    assert not host.package("cuda-keyring").is_installed


@pytest.mark.parametrize(
    "path",
    [
        "/etc/apt/sources.list.d/nvidia-cuda.sources",
        "/etc/apt/preferences.d/volta-serving-nvidia-driver",
        "/etc/apt/apt.conf.d/51volta-serving-nvidia-blacklist",
        "/etc/modprobe.d/volta-serving-blacklist-nouveau.conf",
        "/var/cache/apt/archives/cuda-keyring_1.1-1_all.deb",
        "/var/lib/volta-lab/driver/version",
    ],
)
def test_no_file_written(host, path):
    assert not host.file(path).exists


def test_no_hold(host):
    assert host.check_output("apt-mark showhold") == ""
