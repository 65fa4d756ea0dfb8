"""After the upgrade and the simulated reboot: 580.105.08 installed, held, pinned, loaded."""

UPSTREAM = "580.105.08"
DEB = "580.105.08-0ubuntu0.24.04.1"
PACKAGES = {
    "nvidia-headless-580-server",
    "nvidia-utils-580-server",
    "nvidia-dkms-580-server",
    "nvidia-compute-utils-580-server",
    "libnvidia-compute-580-server",
}


def test_upgraded_packages_are_held(host):
    out = host.check_output(
        "dpkg-query -W -f='${Package} ${Version} ${db:Status-Want} ${db:Status-Status}\\n' 'nvidia-*' 'libnvidia-*'"
    )
    rows = {f[0]: f[1:3] for f in (line.split() for line in out.splitlines()) if f[-1] == "installed"}
    assert set(rows) == PACKAGES
    assert {tuple(v) for v in rows.values()} == {(DEB, "hold")}
    assert set(host.check_output("apt-mark showhold").split()) == PACKAGES


def test_pin_follows_the_upgrade(host):
    pin = host.file("/etc/apt/preferences.d/volta-serving-nvidia-driver").content_string
    assert f"Pin: version {DEB}" in pin


def test_new_module_loaded_and_gpus_answer(host):
    assert f" {UPSTREAM} " in host.file("/var/lib/volta-lab/driver/version").content_string
    out = host.check_output("nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader")
    assert set(out.splitlines()) == {f"Tesla V100-PCIE-32GB, {UPSTREAM}, Enabled"}
    assert len(out.splitlines()) == 8


def test_cuda_repository_signed_by_keyring(host):
    source = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in source
    assert "URIs: http://volta-lab-repo:8080/cuda/debian12/x86_64/" in source
    assert "cuda-" not in host.check_output("ls /etc/apt/sources.list.d/")
    assert host.package("cuda-keyring").version == "1.1-1"
