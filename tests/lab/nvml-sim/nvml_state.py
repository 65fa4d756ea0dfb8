"""Writes the state file of the NVML stand-in (nvml_sim.c) from a GPU simulator profile.

STAND-IN data: the per-GPU values come from tests/lab/gpu-sim/profiles.json (NVIDIA's published V100
values, placeholders elsewhere; that file says which); nothing here was read from a real NVML.

    nvml_state.py PATH [--profile v100-sxm2-10] [--count N] [--set 'INDEX KEY VALUE' ...]

``--set`` adds or replaces a line: "0 ecc.1.0 2" (uncorrected volatile ECC on GPU 0), "0 retired.1 1"
(one double-bit retired page), "0 pending 1", "1 fail.nvmlDeviceGetTemperature 15" (GPU_IS_LOST),
"init_error 9" (DRIVER_NOT_LOADED). The keys are listed in README.md.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

PROFILES = Path(__file__).resolve().parents[1] / "gpu-sim" / "profiles.json"
DRIVER = "580.95.05"
MIB = 1 << 20


def gpu_lines(index, gpu, defaults, nvlinked):
    """The state lines of one GPU: healthy, no ECC errors, no retired pages."""
    d = {**defaults, **gpu}
    lines = {
        "name": d["name"],
        "uuid": d["uuid_format"].format(index=index),
        "bus_id": d["bus_id"],
        "util": d.get("utilization_pct", 0),
        "mem_total": d["memory_total_mib"] * MIB,
        "mem_used": d.get("memory_used_mib", 0) * MIB,
        "temp": d.get("temperature_c", 35),
        "power_mw": int(d.get("power_draw_w", 40) * 1000),
        "limit_mw": int(d["power_limit_w"] * 1000),
        "sm_mhz": d["clocks_max_sm_mhz"],
        "mem_mhz": d["clocks_max_mem_mhz"],
        "reasons": 1,  # nvmlClocksEventReasonGpuIdle: an idle GPU
        "pending": 0,
        "retired.0": 0,
        "retired.1": 0,
        "pcie_gen_current": 3,
        "pcie_gen_max": 3,
        "pcie_width_current": 16,
        "pcie_width_max": 16,
        "nvlinks": 6 if nvlinked else 0,  # a V100 SXM2 has six NVLink 2.0 links; PCIe cards have none
    }
    for etype in (0, 1):
        for ctype in (0, 1):
            lines[f"ecc.{etype}.{ctype}"] = 0
    return {(index, key): value for key, value in lines.items()}


def state(profile="v100-sxm2-10", count=None, driver=DRIVER):
    """{(index or None, key): value} of a profile's GPUs (the first *count* of them)."""
    prof = json.loads(PROFILES.read_text(encoding="utf-8"))["profiles"][profile]
    gpus = prof["gpus"][: count if count is not None else len(prof["gpus"])]
    linked = {i for group in prof.get("nvlink_groups", []) for i in group["gpus"]}
    out = {(None, "driver_version"): driver, (None, "count"): len(gpus)}
    for index, gpu in enumerate(gpus):
        out.update(gpu_lines(index, gpu, prof["gpu_defaults"], index in linked))
    return out


def apply(values, settings):
    """Apply "[INDEX] KEY VALUE" strings to *values*."""
    for setting in settings:
        parts = setting.split()
        if len(parts) == 3:
            values[(int(parts[0]), parts[1])] = parts[2]
        elif len(parts) == 2:
            values[(None, parts[0])] = parts[1]
        else:
            raise ValueError(f"--set wants 'INDEX KEY VALUE' or 'KEY VALUE', not {setting!r}")
    return values


def render(values):
    lines = [f"{key} {value}" for (index, key), value in values.items() if index is None]
    lines += [f"{index} {key} {value}" for (index, key), value in values.items() if index is not None]
    return "# STAND-IN NVML state (tests/lab/nvml-sim), not a real GPU\n" + "\n".join(lines) + "\n"


def write(path, values):
    """Write atomically: the library re-reads the file on every call."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render(values), encoding="utf-8")
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--profile", default="v100-sxm2-10")
    parser.add_argument("--count", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], dest="settings")
    args = parser.parse_args(argv)
    write(args.path, apply(state(args.profile, args.count), args.settings))


if __name__ == "__main__":
    main()
