# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host layer's Volta refusals: which GPUs a host has, and what the driver and toolkit roles refuse on them.

Pure Python, no Ansible imports. The one home of the GPU source (nvidia-smi when a driver answers, else
volta_server, the inventory's description of the host) and of the role-time refusals: a driver branch
above 580, the open kernel modules and CUDA 13 on GPUs below compute capability 7.5. The thresholds are
those of the serving-plan rules (``_rules.py``); the filter ``volta.serving.host_refusals`` serves them
to volta.serving.nvidia_driver and volta.serving.cuda_toolkit.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import FIRST_CUDA_WITHOUT_SM70, parse_version
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import LAST_VOLTA_DRIVER_BRANCH, SM70_BELOW, below

NO_GPU = {"index": "-", "name": "-", "compute_capability": "-", "source": "-"}


def gpu_source(facts, server):
    """The host's GPUs, each {index, name, compute_capability, source}, and where they came from.

    *facts* is the volta_gpu fact (volta.serving.gpu_facts): its GPUs when its status is ok. Else
    *server* (volta_server) stands for all GPUs at once; without its compute_capability there is none.
    Returns (gpus, source) with source "nvidia-smi", "volta_server" or "none".
    """
    facts = facts if isinstance(facts, dict) else {}
    server = server if isinstance(server, dict) else {}
    if facts.get("status") == "ok":
        gpus = [{"index": g.get("index"), "name": g.get("name"),
                 "compute_capability": str(g.get("compute_capability")), "source": "nvidia-smi"}
                for g in facts.get("gpus") or []]
        return gpus, "nvidia-smi"
    if server.get("compute_capability") is None:
        return [], "none"
    return [{"index": "all", "name": server.get("gpu_model") or "GPU",
             "compute_capability": str(server["compute_capability"]), "source": "volta_server"}], "volta_server"


def legacy(gpus):
    """The GPUs below compute capability 7.5 (Volta and older), which the refusals protect."""
    return [g for g in gpus if below(parse_version(g["compute_capability"]), SM70_BELOW)]


def _about(gpu):
    return (f"GPU {gpu['index']} {gpu['name']} (compute capability {gpu['compute_capability']}, "
            f"from {gpu['source']})")


def driver_branch_refusal(host, gpu, branch):
    """The refusal of a driver branch above 580 for *gpu* (a legacy GPU or None), or ""."""
    number = parse_version(branch)
    if gpu is None or number is None or number[0] <= LAST_VOLTA_DRIVER_BRANCH:
        return ""
    last = LAST_VOLTA_DRIVER_BRANCH
    return (f"{host}: refusing driver branch {branch} for {_about(gpu)}. Why: {last} is the last driver branch "
            "that supports Volta and older GPUs; a newer driver does not bind to them and nvidia-smi reports "
            f'"No devices were found". Fix: set nvidia_driver_branch to "{last}".')


def open_modules_refusal(host, gpu, kernel_module):
    """The refusal of the open kernel modules for *gpu* (a legacy GPU or None), or ""."""
    if gpu is None or kernel_module != "open":
        return ""
    return (f"{host}: refusing the -open kernel module packages for {_about(gpu)}. Why: NVIDIA's open kernel "
            "modules support Turing (7.5) and newer only. Fix: set nvidia_driver_kernel_module to proprietary.")


def cuda_refusal(host, gpu, cuda_version):
    """The refusal of CUDA 13 or newer for *gpu* (a legacy GPU or None), or ""."""
    number = parse_version(cuda_version)
    if gpu is None or number is None or number[0] < FIRST_CUDA_WITHOUT_SM70:
        return ""
    arch = str(gpu["compute_capability"]).replace(".", "")
    return (f"{host}: refusing CUDA {cuda_version} for {_about(gpu)}. Why: CUDA {FIRST_CUDA_WITHOUT_SM70} "
            "cannot compile for this GPU: nvcc fails with "
            f"\"nvcc fatal   : Unsupported gpu architecture 'compute_{arch}'\". Fix: set cuda_toolkit_version "
            'to "12.8".')


def host_refusals(facts, server, host, driver_branch=None, kernel_module=None, cuda_version=None):
    """Everything the host layer needs about the GPUs: {gpus, source, legacy, refusals}.

    refusals maps driver_branch, kernel_module and cuda_toolkit to the refusal message ("" when the
    setting is fine, or not given). The first legacy GPU is the one named.
    """
    gpus, source = gpu_source(facts, server)
    old = legacy(gpus)
    first = old[0] if old else None
    return {
        "gpus": gpus,
        "source": source,
        "legacy": old,
        "first": gpus[0] if gpus else dict(NO_GPU),
        "refusals": {
            "driver_branch": driver_branch_refusal(host, first, driver_branch) if driver_branch is not None else "",
            "kernel_module": open_modules_refusal(host, first, kernel_module),
            "cuda_toolkit": cuda_refusal(host, first, cuda_version) if cuda_version is not None else "",
        },
    }
