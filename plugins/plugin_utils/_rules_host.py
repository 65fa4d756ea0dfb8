# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's rules: its GPUs (indexes, sharing), its RAM, and the GPUs detected on it against volta_server.

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE, and ``_plan`` runs the checks. The GPU health rules (``_health_rules``) are the other
half of what the host itself is.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import parse_version
from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    HOST_RAM_NEED_GB,
    HOST_RAM_RESERVE_GB,
    LAST_VOLTA_DRIVER_BRANCH,
    SM70_BELOW,
    below,
)

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "gpu-out-of-range": (ERROR, False, "a GPU index the host does not have"),
    "gpu-duplicate": (ERROR, False, "the same GPU listed twice in one instance"),
    "gpu-shared": (ERROR, False, "a GPU used by two enabled instances"),
    "host-ram": (WARNING, False, "less host RAM than the enabled instances need"),
    "gpu-facts-mismatch": (ERROR, False, "volta_server differs from the GPUs found on the host"),
}


def check_gpus(instances, ctx):
    host, count = ctx["host"], ctx["gpu_count"]
    out = []
    used = {}
    for inst in instances:
        gpus = inst["gpus"]
        if gpus is None:
            continue
        seen = set()
        for gpu in gpus:
            if count is not None and not 0 <= gpu < count:
                out.append(
                    finding(
                        "gpu-out-of-range",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} does not exist: volta_server.gpu_count is {count} (indexes 0-{count - 1}).",
                        "CUDA_VISIBLE_DEVICES with a missing index hides every GPU after it.",
                        f"use indexes between 0 and {count - 1}.",
                    )
                )
            if gpu in seen:
                out.append(
                    finding(
                        "gpu-duplicate",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} is listed twice.",
                        "each worker of the engine needs a GPU of its own.",
                        "list each GPU once.",
                    )
                )
            seen.add(gpu)
            if inst["enabled"] and gpu in used and used[gpu] != inst["name"]:
                out.append(
                    finding(
                        "gpu-shared",
                        host,
                        inst["name"],
                        "gpus",
                        f"GPU {gpu} is also used by instance {used[gpu]}.",
                        "each engine reserves gpu_memory_utilization of the whole GPU; two engines on one GPU "
                        "run out of memory at start.",
                        "give each enabled instance its own GPUs, or set enabled: false on one of them.",
                    )
                )
            elif inst["enabled"]:
                used.setdefault(gpu, inst["name"])
    return out


def check_ram(instances, ctx):
    ram = ctx["ram_gb"]
    if ram is None:
        return []
    need_by_family = {**HOST_RAM_NEED_GB, **ctx["ram_need_gb"]}
    enabled = [inst for inst in instances if inst["enabled"] and inst["model_family"] in need_by_family]
    if not enabled:
        return []
    parts = [(inst["name"], need_by_family[inst["model_family"]]) for inst in enabled]
    need = HOST_RAM_RESERVE_GB + sum(gb for _name, gb in parts)
    if ram >= need:
        return []
    detail = ", ".join(f"{name} {gb} GB" for name, gb in parts)
    return [
        finding(
            "host-ram",
            ctx["host"],
            None,
            "volta_server.ram_gb",
            f"ram_gb {ram} is below the {need} GB the enabled instances need ({detail}, "
            f"+{HOST_RAM_RESERVE_GB} GB for the host).",
            "Qwen3.8-Flash-Next-style models offload ~48 GB of n-gram embeddings per instance to host RAM; "
            "an engine that runs out of host RAM is killed by the OOM killer.",
            "add RAM, disable an instance, or correct preflight_host_ram_need_gb for the model.",
        )
    ]


def check_gpu_facts(facts, server, ctx):
    """Compare detected GPUs (the volta_gpu fact, status ok) with volta_server, like the role does."""
    if not isinstance(facts, dict) or facts.get("status") != "ok":
        return []
    host = ctx["host"]
    out = []

    def mismatch(field, said, found):
        out.append(
            finding(
                "gpu-facts-mismatch",
                host,
                None,
                f"volta_server.{field}",
                f"volta_server says {said}, the host has {found}.",
                "the serving plan (GPU indexes, TP groups, SM70 rules) is built from volta_server.",
                f"correct volta_server.{field} in host_vars/{host}.yml, or the hardware.",
            )
        )

    if facts.get("gpu_count") != server.get("gpu_count"):
        mismatch("gpu_count", server.get("gpu_count"), facts.get("gpu_count"))
    gpus = facts.get("gpus") or []
    models = sorted({gpu.get("name") for gpu in gpus})
    if models != [server.get("gpu_model")]:
        mismatch("gpu_model", server.get("gpu_model"), ", ".join(map(str, models)))
    caps = sorted({str(gpu.get("compute_capability")) for gpu in gpus})
    if caps != [str(server.get("compute_capability"))]:
        mismatch("compute_capability", server.get("compute_capability"), ", ".join(caps))
    want = sorted(sorted(island) for island in server.get("nvlink_islands") or [])
    found = sorted(sorted(island) for island in facts.get("nvlink_islands") or [])
    if want != found:
        mismatch("nvlink_islands", want, found)
    return out + _installed_driver(facts, host)


def _installed_driver(facts, host):
    """The driver found on an SM70 host: its branch and its kernel module (the volta_gpu fact)."""
    out = []
    cc = parse_version(facts.get("min_compute_capability"))
    if below(cc, SM70_BELOW):
        branch = parse_version(facts.get("driver_version"))
        if branch and branch[0] > LAST_VOLTA_DRIVER_BRANCH:
            out.append(
                finding(
                    "driver-branch-above-580",
                    host,
                    None,
                    "volta_gpu.driver_version",
                    f"driver {facts.get('driver_version')} is installed on compute capability "
                    f"{facts.get('min_compute_capability')}.",
                    "580 is the last driver branch that supports Volta.",
                    "install the 580 branch (the nvidia_driver role) and hold it.",
                )
            )
        if facts.get("kernel_module") == "open":
            out.append(
                finding(
                    "driver-open-modules",
                    host,
                    None,
                    "volta_gpu.kernel_module",
                    "the loaded NVIDIA kernel module is the open one.",
                    "the open NVIDIA kernel modules support Turing and newer only.",
                    "install the proprietary modules (nvidia_driver_kernel_module: proprietary).",
                )
            )
    return out
