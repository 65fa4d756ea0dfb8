# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The decisions of volta.serving.nvidia_driver: its settings check, the drift between the loaded and the
installed driver, and what its verify step checks and says.

Pure Python, no Ansible imports; controller-only. Served by the filters ``volta.serving.driver_settings``,
``volta.serving.driver_drift`` and ``volta.serving.driver_verify`` (plugins/filter/driver_verify.py).
The operating systems the host layer supports (SUPPORTED) are shared with _toolkit_checks.py.
"""

from __future__ import annotations

import re

# The distributions the driver and toolkit roles support: Ubuntu by distribution_version, Debian by
# distribution_major_version.
SUPPORTED = {"Ubuntu": ("22.04", "24.04"), "Debian": ("12",)}
# The installed user-space driver when the role's main package is not there: a driver installed before
# this role, under another name (Ubuntu libnvidia-compute-*, Debian libcuda1).
OTHER_DRIVER_PACKAGE = r"^(libnvidia-compute-|libcuda1$)"


def os_supported(facts):
    """Whether the host's distribution and release are supported (SUPPORTED)."""
    facts = facts if isinstance(facts, dict) else {}
    distribution = facts.get("distribution")
    if distribution not in SUPPORTED:
        return False
    release = facts.get("distribution_version") if distribution == "Ubuntu" else facts.get("distribution_major_version")
    return str(release) in SUPPORTED[distribution]


def os_text(facts):
    """'<distribution> <distribution_version>' for the messages."""
    facts = facts if isinstance(facts, dict) else {}
    return f"{facts.get('distribution')} {facts.get('distribution_version')}"


def settings_problem(facts, host, branch, version, plan_problems=()):
    """The first problem of the driver's settings on this host, or "": the operating system, then the driver's
    package set for it (*plan_problems*, volta.serving.driver_packages), then the requested version."""
    branch, version = str(branch), "" if version is None else str(version)
    if not os_supported(facts):
        return (f"{host}: {os_text(facts)} is not supported. Why: the driver packages exist for Ubuntu "
                "22.04/24.04 and Debian 12 only. Fix: run volta.serving.nvidia_driver on one of those.")
    if plan_problems:
        return f"{host} ({os_text(facts)}): {' '.join(plan_problems)}"
    version_ok = re.match(r"^[0-9]{3}$", branch) and (
        version == "" or re.match("^" + branch + r"\.[0-9]+(\.[0-9]+)?(-\S+)?$", version))
    if not version_ok:
        return (f"{host}: nvidia_driver_version {version} is not a version of branch {branch}. Why: the version "
                f"pin and the branch must agree. Fix: set nvidia_driver_version to \"\" or to a {branch}.x "
                f"version such as {branch}.95.05, or change nvidia_driver_branch.")
    return ""


def upstream_version(installed, main_package):
    """The upstream version of the installed user-space driver: that of *main_package*, else that of the first
    libnvidia-compute-* or libcuda1 package; "" when none is installed."""
    installed = installed if isinstance(installed, dict) else {}
    if main_package in installed:
        debian = installed[main_package]
    else:
        debian = next((v for k, v in installed.items() if re.match(OTHER_DRIVER_PACKAGE, k)), "")
    return re.sub(r"^([0-9]+:)?([^-]+)-.*$", r"\2", str(debian))


def drift(installed, main_package, gpu, pci_functions):
    """{installed_version, loaded_version, drift}: drift when a driver is installed and the loaded kernel module
    is another version, or none is loaded on a host with an NVIDIA PCI function, or nvidia-smi reports a
    driver/library mismatch."""
    gpu = gpu if isinstance(gpu, dict) else {}
    upstream = upstream_version(installed, main_package)
    loaded = gpu.get("loaded_driver_version") or ""
    drifted = bool(upstream) and ((bool(loaded) and loaded != upstream)
                                  or (not loaded and int(pci_functions or 0) > 0)
                                  or gpu.get("status") == "driver_mismatch")
    return {"installed_version": upstream, "loaded_version": loaded, "drift": drifted}


def _int(value):
    """Jinja's int filter: the number, else 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def verify_mode(gpu, check_mode, installed_version, has_pci_gpu):
    """check_mode (the driver is not installed yet), no_gpu (no NVIDIA PCI function and nvidia-smi finds no
    driver) or verify."""
    status = gpu.get("status")
    if check_mode and not installed_version and status != "ok":
        return "check_mode"
    if status == "no_driver" and not has_pci_gpu:
        return "no_gpu"
    return "verify"


def version_ok(driver_version, version, branch):
    """Whether nvidia-smi's driver version is the requested version, else on the branch."""
    driver_version = driver_version or ""
    if version:
        return driver_version == re.sub(r"-.*$", "", str(version))
    return re.match(re.escape(str(branch)) + r"\.", driver_version) is not None


def verify(gpu, host, server=None, version="", branch="", persistence=True, persistence_off=(), check_mode=False,
           installed_version="", has_pci_gpu=False):
    """What the driver's verify step decides: {mode, skip, uvm, issues, fail_msg, success_msg}.

    *gpu* is the volta_gpu fact, *server* volta_server. skip: nothing to verify (mode check_mode or no_gpu);
    uvm: the nvidia-uvm device is checked (a host whose GPUs answer, outside check mode); issues: what does
    not match (nvidia-smi's status, else the GPU count and model of volta_server, the driver version, the
    persistence mode of *persistence_off* outside check mode).
    """
    gpu = gpu if isinstance(gpu, dict) else {}
    server = server if isinstance(server, dict) else {}
    version = "" if version is None else str(version)
    mode = verify_mode(gpu, check_mode, installed_version, has_pci_gpu)
    names = list(dict.fromkeys(g.get("name") for g in gpu.get("gpus") or []))
    issues = []
    if gpu.get("status") != "ok":
        issues.append(f"nvidia-smi reports {gpu.get('status')}: {gpu.get('message')}")
    else:
        if gpu.get("gpu_count") != _int(server.get("gpu_count")):
            issues.append(f"volta_server has {server.get('gpu_count')} GPUs, nvidia-smi lists {gpu.get('gpu_count')}")
        if names != [server.get("gpu_model")]:
            issues.append(f"volta_server says {server.get('gpu_model')}, nvidia-smi lists {', '.join(map(str, names))}")
        if not version_ok(gpu.get("driver_version"), version, branch):
            wanted = version if version else f"on branch {branch}"
            issues.append(f"driver {gpu.get('driver_version')} is not {wanted}")
        if not check_mode and persistence_off:
            issues.append(f"persistence mode is off on GPU {', '.join(map(str, persistence_off))}")
    fix = (f"install and load the driver (nvidia-smi: {gpu.get('message')})" if gpu.get("status") != "ok"
           else "correct volta_server or nvidia_driver_version, or the hardware")
    if mode == "check_mode":
        success = f"{host}: GPU verification skipped: check mode, and the driver is not installed yet"
    elif mode == "no_gpu":
        success = (f"{host}: GPU verification skipped: this host has no NVIDIA PCI function and nvidia-smi "
                   f"finds no driver ({gpu.get('message')})")
    else:
        success = (f"{host}: {gpu.get('gpu_count')} x {', '.join(map(str, names))}, "
                   f"driver {gpu.get('driver_version')}, persistence mode {'on' if persistence else 'not managed'}")
    return {
        "mode": mode,
        "skip": mode != "verify",
        "uvm": mode == "verify" and gpu.get("status") == "ok" and not check_mode,
        "issues": issues,
        "fail_msg": f"{host}: the driver does not verify: {'; '.join(issues)}. Fix: {fix}.",
        "success_msg": success,
    }
