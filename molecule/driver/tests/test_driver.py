"""Verify nvidia_driver on both package paths.

Expected values come from the scenario (molecule.yml) and the lab's repositories
(tests/lab/apt/build), not from the role under test.
"""

import pytest

DEB = "580.95.05-0ubuntu0.24.04.1"
NEWER_580 = "580.105.08-0ubuntu0.24.04.1"
BRANCH_590 = "590.44.01-0ubuntu0.24.04.1"
COMMON = {
    "nvidia-utils-580-server",
    "nvidia-compute-utils-580-server",
    "libnvidia-compute-580-server",
}
HOSTS = {
    "driver-ubuntu": {
        "main": "nvidia-driver-580-server",
        # nvidia-driver-580-server depends on the X driver, whose name nvidia-* misses
        "packages": COMMON | {"nvidia-driver-580-server", "nvidia-dkms-580-server",
                              "xserver-xorg-video-nvidia-580-server"},
        "modules": set(),
        "deb": DEB,
        "gpu": "Tesla V100-SXM2-32GB",
        "count": 10,
        "cuda_source": False,
    },
    # Canonical's precompiled modules: the no-DKMS user space and linux-modules-nvidia-* (kernel versions),
    # at the driver version the stand-in's module for the lab's kernel is built for.
    "driver-precompiled": {
        "main": "nvidia-headless-no-dkms-580-server",
        "packages": COMMON | {"nvidia-headless-no-dkms-580-server", "nvidia-kernel-common-580-server"},
        "modules": {"linux-modules-nvidia-580-server-generic", "linux-modules-nvidia-580-server-{kernel}"},
        "deb": NEWER_580,
        "gpu": "Tesla V100-PCIE-32GB",
        "count": 8,
        "cuda_source": False,
    },
}
PATTERNS = ("nvidia-", "libnvidia-", "cuda-drivers", "xserver-xorg-video-nvidia-", "linux-modules-nvidia-")


@pytest.fixture
def expected(host):
    found = dict(HOSTS[host.backend.get_hostname()])
    kernel = host.check_output("uname -r")
    found["modules"] = {name.format(kernel=kernel) for name in found["modules"]}
    return found


def installed_driver_packages(host):
    out = host.check_output(
        "dpkg-query -W -f='${Package} ${Version} ${db:Status-Status}\\n' 'nvidia-*' 'libnvidia-*' 'cuda-drivers*' "
        "'xserver-xorg-video-nvidia-*' 'linux-modules-nvidia-*' 2>/dev/null || true"
    )
    rows = [line.split() for line in out.splitlines()]
    return {r[0]: r[1] for r in rows if len(r) == 3 and r[2] == "installed"}


def test_driver_packages_installed_at_pinned_version(host, expected):
    installed = installed_driver_packages(host)
    assert set(installed) == expected["packages"] | expected["modules"]
    assert {installed[name] for name in expected["packages"]} == {expected["deb"]}


def test_every_driver_package_is_held(host, expected):
    held = set(host.check_output("apt-mark showhold").split())
    installed = set(installed_driver_packages(host))
    assert installed <= held
    assert {p for p in held if p.startswith(PATTERNS)} == installed


def test_precompiled_host_has_no_dkms_and_runs_the_precompiled_module(host, expected):
    if not expected["modules"]:
        pytest.skip("a DKMS host")
    assert not host.package("nvidia-dkms-580-server").is_installed
    assert host.service("volta-lab-nvidia-module-precompiled").is_enabled
    assert " 580.105.08 " in host.file("/usr/share/volta-lab/precompiled/proc-version").content_string


def test_upgrade_keeps_held_packages_back(host, expected):
    # Without the role's version pin (apt's own view of the repositories): a 590 driver is a candidate
    # (and, below the precompiled host's 580.105.08, a newer 580), and only the holds keep apt-get
    # (dist-)upgrade off them.
    no_pin = "-o Dir::Etc::PreferencesParts=/nonexistent"
    policy = host.check_output(f"apt-cache {no_pin} policy {expected['main']} nvidia-driver-590-server")
    assert f"Candidate: {NEWER_580}" in policy
    assert f"Candidate: {BRANCH_590}" in policy
    assert f"Installed: {expected['deb']}" in policy
    for command in ("upgrade", "dist-upgrade"):
        for options in (no_pin, ""):
            sim = host.run(f"apt-get -s {options} {command}")
            assert sim.rc == 0, sim.stderr
            touched = [
                line for line in sim.stdout.splitlines()
                if line.startswith(("Inst ", "Remv ", "Conf ")) and line.split()[1].startswith(PATTERNS)
            ]
            assert touched == [], f"apt-get {options} {command} would change: {touched}"
        if expected["deb"] == NEWER_580:
            continue
        kept = host.check_output(f"apt-get -s {no_pin} {command}").split("kept back:", 1)
        assert len(kept) == 2, f"apt-get {command}: nothing kept back"
        for package in expected["packages"]:
            assert package in kept[1].split(), f"{package} not kept back by apt-get {command}"


def test_version_pin(host, expected):
    pin = host.file("/etc/apt/preferences.d/volta-serving-nvidia-driver")
    assert pin.exists
    assert "Ansible managed" in pin.content_string
    assert f"Pin: version {expected['deb']}" in pin.content_string
    # kernel-versioned module packages must stay out of the driver's version pin
    assert "Package: nvidia-* libnvidia-* cuda-drivers* xserver-xorg-video-nvidia-580-server*" in pin.content_string
    policy = host.check_output(f"apt-cache policy {expected['main']}")
    assert f"Candidate: {expected['deb']}" in policy


def test_unattended_upgrades_blacklist(host):
    conf = host.file("/etc/apt/apt.conf.d/51volta-serving-nvidia-blacklist")
    assert conf.exists
    assert conf.mode == 0o644
    assert "Ansible managed" in conf.content_string
    dump = host.check_output("apt-config dump Unattended-Upgrade::Package-Blacklist")
    for regex in ("^nvidia-", "^libnvidia-", "^cuda-drivers", "^xserver-xorg-video-nvidia-580-server",
                  "^linux-modules-nvidia-580-server-"):
        assert f'"{regex}";' in dump


def test_nouveau_blacklisted(host):
    conf = host.file("/etc/modprobe.d/volta-serving-blacklist-nouveau.conf")
    assert conf.exists
    assert "blacklist nouveau" in conf.content_string.splitlines()


def test_nvidia_smi_answers_with_profile_gpus(host, expected):
    out = host.check_output(
        "nvidia-smi --query-gpu=index,name,compute_cap,driver_version,persistence_mode --format=csv,noheader"
    )
    rows = [line.split(", ") for line in out.splitlines()]
    assert [int(r[0]) for r in rows] == list(range(expected["count"]))
    assert {r[1] for r in rows} == {expected["gpu"]}
    assert {r[2] for r in rows} == {"7.0"}
    assert {r[3] for r in rows} == {expected["deb"].split("-")[0]}
    assert {r[4] for r in rows} == {"Enabled"}


def test_loaded_module_is_installed_driver(host, expected):
    loaded = host.file("/var/lib/volta-lab/driver/version").content_string
    assert f" {expected['deb'].split('-')[0]} " in loaded
    assert "Open Kernel Module" not in loaded


def test_persistenced_enabled_and_running(host):
    service = host.service("nvidia-persistenced")
    assert service.is_enabled
    assert service.is_running


def test_apt_sources(host, expected):
    source = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources")
    lists = host.check_output("ls /etc/apt/sources.list.d/")
    assert "cuda-" not in lists, "the keyring's one-line source must be gone"
    assert not host.file("/etc/apt/trusted.gpg").exists, "no apt-key keyring"
    if expected["cuda_source"]:
        text = source.content_string
        assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in text
        assert "URIs: http://volta-lab-repo:8080/cuda/debian12/x86_64/" in text
        assert "Suites: /" in text
        policy = host.check_output(f"apt-cache policy {expected['main']}")
        assert "volta-lab-repo:8080/cuda/debian12/x86_64" in policy
    else:
        assert not source.exists


def test_role_refreshed_the_fresh_but_empty_lists(host):
    # prepare.yml emptied the lists, made them look just refreshed and removed this stamp; only
    # volta.serving.apt_lists' refresh (the driver had no candidate) writes it again.
    assert host.file("/var/lib/apt/periodic/update-success-stamp").exists
    assert "Candidate: 580." in host.check_output("LC_ALL=C apt-cache policy nvidia-driver-580-server")


def test_nvidia_uvm_loaded_at_boot_and_its_device_present(host):
    conf = host.file("/etc/modules-load.d/volta-serving-nvidia-uvm.conf")
    assert conf.exists and conf.user == "root" and conf.mode == 0o644
    assert "nvidia-uvm" in [line.strip() for line in conf.content_string.splitlines() if not line.startswith("#")]
    assert host.run("test -c /dev/nvidia-uvm").rc == 0
