# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serving plan's GPU health rules: refusals and warnings from the health section of the volta_gpu fact.

Pure Python, no Ansible imports. The facts come from volta.serving.gpu_facts (``health``, built by
``_gpu_health.build_health``); these rules only read them. A host whose health is unknown (no GPU listed,
an nvidia-smi without ``-q -x``, the fact not read in this run) gets no finding here.

Each problem kind of the facts maps to one rule (HOST_RULES); an enabled instance that uses a GPU the
facts mark failed is refused by name (``instance-on-failed-gpu``), so that engine_service, which builds
the same plan, refuses it before changing anything.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding

# problem kind (from _gpu_health) -> (rule, why, fix)
HOST_RULES = {
    "pending-retirement": (
        "gpu-pending-retirement",
        "a V100 retires a memory page with an uncorrectable or repeated single-bit ECC error only when the "
        "driver loads again (Dynamic Page Retirement; Xid 63 \"reload the driver to activate\"); until then the "
        "bad page stays in use.",
        "reboot first (or unload and load the NVIDIA driver with nothing running), then run again; a GPU whose "
        "retired pages keep growing is failing and should be replaced.",
    ),
    "ecc-uncorrectable": (
        "gpu-ecc-uncorrectable",
        "an uncorrectable (double-bit) ECC error corrupts what the GPU computes; the process that hit it is "
        "killed (Xid 48) and its pages wait for retirement.",
        "reboot to retire the pages and clear the volatile counters; if the errors come back, replace the GPU "
        "(nvidia-smi -q -d ECC,PAGE_RETIREMENT shows the counts).",
    ),
    "pcie-degraded": (
        "pcie-link-degraded",
        "a link below its maximum width or generation (a loose riser, a dirty or damaged slot, a BIOS "
        "setting) cuts host-to-GPU and pipeline-parallel bandwidth; an idle GPU may lower its generation to "
        "save power, but not its width.",
        "check the generation under load (nvidia-smi -q -d PCI); for a narrow link reseat the GPU or riser "
        "and check the slot's BIOS settings.",
    ),
    "throttled": (
        "gpu-throttled",
        "hardware slowdown, thermal or power-brake throttling means cooling, power delivery or the GPU itself "
        "is failing; tokens per second drop with it.",
        "check fans, airflow, heatsink paste and the power supply (nvidia-smi -q -d PERFORMANCE,TEMPERATURE).",
    ),
}

# The rules of this module (id: (severity, overridable, what it is about); the registry, _rules.RULES,
# assembles every layer's).
CATALOGUE = {
    "gpu-missing": (ERROR, False, "fewer GPUs than volta_server.gpu_count, or a GPU in sysfs nvidia-smi lacks"),
    "gpu-pending-retirement": (ERROR, False, "a GPU with memory pages waiting for retirement (reboot first)"),
    "gpu-ecc-uncorrectable": (ERROR, False, "a GPU with uncorrectable volatile ECC errors"),
    "instance-on-failed-gpu": (ERROR, False, "an enabled instance on a GPU the health facts mark failed"),
    "pcie-link-degraded": (WARNING, False, "a GPU's PCIe link trained below its maximum width or generation"),
    "gpu-throttled": (WARNING, False, "hardware slowdown, thermal or power-brake throttling active"),
}
# Every rule of this module, in the order of its checks.
HEALTH_RULES = ("gpu-missing", *(rule for rule, _why, _fix in HOST_RULES.values()), "instance-on-failed-gpu")


def _health(facts):
    """The health section when it was read (status ok), else None."""
    if not isinstance(facts, dict) or facts.get("status") != "ok":
        return None
    health = facts.get("health")
    return health if isinstance(health, dict) and health.get("status") == "ok" else None


def missing_gpus(health):
    """{expected index: sysfs address} of the GPUs in sysfs that nvidia-smi lost.

    nvidia-smi numbers GPUs in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID does the same), so a lost
    GPU's index is its position among the GPU functions in sysfs.
    """
    functions = sorted(health.get("pci_functions") or [])
    return {functions.index(address): address for address in health.get("missing") or [] if address in functions}


def failed_gpus(health):
    """{index: why} of the GPUs an instance must not use: failed problems of the facts, and lost GPUs."""
    failed = {}
    for problem in health.get("problems") or []:
        if problem.get("state") == "failed" and problem.get("index") is not None:
            failed.setdefault(problem["index"], []).append(problem["text"])
    for index, address in missing_gpus(health).items():
        failed.setdefault(index, []).append(f"GPU {index} ({address}) is not listed by nvidia-smi")
    return {index: "; ".join(texts) for index, texts in failed.items()}


def _missing_finding(host, facts, server, health):
    want, found = server.get("gpu_count"), facts.get("gpu_count")
    lost = missing_gpus(health)
    if not lost and not (isinstance(want, int) and isinstance(found, int) and found < want):
        return []
    names = ", ".join(f"GPU {index} at PCI {address}" for index, address in sorted(lost.items()))
    seen = (f"missing: {names} (an NVIDIA GPU in sysfs that nvidia-smi does not list)." if names else
            "the missing GPU's bus id is unknown (sysfs lists no NVIDIA GPU that nvidia-smi lacks).")
    return [finding(
        "gpu-missing", host, None, "volta_server.gpu_count",
        f"volta_server.gpu_count is {want}, nvidia-smi lists {found}; {seen}",
        "a GPU that fell off the bus (Xid 79) is gone until the host restarts, and every GPU after it "
        "moves down one index, so the instances would start on the wrong GPUs.",
        "look for Xid 79 and PCIe errors in the kernel log, reseat or replace the GPU, reboot, and run again.",
    )]


def check_gpu_health(facts, server, instances, ctx):
    """Findings from the health section of *facts* (the volta_gpu fact) for the host and its instances."""
    health = _health(facts)
    if health is None:
        return []
    host = ctx["host"]
    server = server if isinstance(server, dict) else {}
    out = _missing_finding(host, facts, server, health)
    for problem in health.get("problems") or []:
        if problem.get("kind") not in HOST_RULES:
            continue
        rule, why, fix = HOST_RULES[problem["kind"]]
        out.append(finding(rule, host, None, f"GPU {problem['index']} ({problem['bus_id']})",
                           problem["text"] + ".", why, fix))
    failed = failed_gpus(health)
    for inst in instances:
        gpus = [gpu for gpu in inst.get("gpus") or [] if gpu in failed]
        if not inst.get("enabled") or not gpus:
            continue
        out.append(finding(
            "instance-on-failed-gpu", host, inst.get("name"), "gpus",
            f"refusing to start instance {inst.get('name')} on "
            + "; ".join(f"GPU {gpu}: {failed[gpu]}" for gpu in gpus) + ".",
            "an engine on a failed GPU dies at start or returns corrupt results; nothing has been changed yet.",
            "fix the GPU first (see the host-wide findings), or move the instance to healthy GPUs, or set "
            "enabled: false on it.",
        ))
    return out
