"""After the upgrade and the simulated reboot: 580.105.08 installed, held, pinned, loaded.

Debian 12 with NVIDIA's debian12 repository (the lab's stand-in, tests/lab/apt/build
debian_driver_packages): Debian's names, versions <upstream>-1, and 590.44.01-1 of the same names
published beside the 580s. Expected values come from the scenario and the stand-in repository.
"""

UPSTREAM = "580.105.08"
DEB = "580.105.08-1"
BRANCH_590 = "590.44.01-1"
# nvidia-driver-cuda + nvidia-kernel-dkms (NVIDIA's documented compute-only install) and what they pull in.
PACKAGES = {
    "nvidia-driver-cuda",
    "nvidia-kernel-dkms",
    "firmware-nvidia-gsp",
    "libcuda1",
    "libnvidia-cfg1",
    "libnvidia-ml1",
    "nvidia-persistenced",
    "nvidia-smi",
}
NO_PIN = "-o Dir::Etc::PreferencesParts=/nonexistent"


def driver_rows(host):
    out = host.check_output(
        "dpkg-query -W -f='${Package} ${Version} ${db:Status-Want} ${db:Status-Status} ${source:Package}\\n'"
    )
    rows = [line.split() for line in out.splitlines()]
    return {r[0]: (r[1], r[2]) for r in rows if len(r) == 5 and r[3] == "installed" and "nvidia" in r[4]}


def test_debian_named_packages_are_installed_and_held(host):
    rows = driver_rows(host)
    assert set(rows) == PACKAGES
    assert set(rows.values()) == {(DEB, "hold")}
    assert set(host.check_output("apt-mark showhold").split()) == PACKAGES
    assert not host.run("dpkg-query -W 'nvidia-*-580-server'").stdout.strip()


def test_pin_is_nvidias_source_package_preference(host):
    pin = host.file("/etc/apt/preferences.d/volta-serving-nvidia-driver").content_string
    lines = [line for line in pin.splitlines() if not line.startswith("#")]
    assert lines == ["Package: src:*nvidia*:any src:cuda-drivers:any", f"Pin: version {DEB}", "Pin-Priority: 1001"]
    # apt (Debian 12's own) honours it: 590 is the repository's candidate, the pin keeps 580.105.08.
    assert f"Candidate: {BRANCH_590}" in host.check_output(f"apt-cache {NO_PIN} policy nvidia-driver-cuda")
    for package in ("nvidia-driver-cuda", "libcuda1", "nvidia-persistenced", "firmware-nvidia-gsp"):
        assert f"Candidate: {DEB}" in host.check_output(f"apt-cache policy {package}")


def test_holds_keep_every_package_back_from_590(host):
    for command in ("upgrade", "dist-upgrade"):
        sim = host.run(f"apt-get -s {NO_PIN} {command}")
        assert sim.rc == 0, sim.stderr
        touched = [line for line in sim.stdout.splitlines() if line.startswith(("Inst ", "Remv "))]
        assert touched == [], f"apt-get {command} without the pin would change: {touched}"
        kept = sim.stdout.split("kept back:", 1)
        assert len(kept) == 2 and PACKAGES <= set(kept[1].split()), sim.stdout


def test_unattended_upgrades_blacklist_names_the_debian_packages(host):
    dump = host.check_output("apt-config dump Unattended-Upgrade::Package-Blacklist")
    for regex in ("^nvidia-", "^libnvidia-", "^cuda-drivers", "^libcuda1", "^firmware-nvidia-gsp", "^libglx-nvidia0"):
        assert f'"{regex}";' in dump


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
