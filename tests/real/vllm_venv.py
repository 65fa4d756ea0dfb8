"""A cached venv holding the REAL vLLM (``--no-deps``) on a CPU torch, to run its parser and config classes.

Built once per vLLM version into the real-artifact cache (``artifacts.CACHE``), never in the
checkout. The recipe (measured on the build machines, see tests/real/README.md):

1. ``python -m venv``; ``pip install torch==CPU_TORCH`` (the machines carry its CPU build; pip's
   configuration finds it, elsewhere pip takes the index's build);
2. ``pip install --no-deps`` the real vLLM wheel from the cache;
3. vLLM's own ``Requires-Dist`` minus the GPU-only and torch packages (``SKIP``), installed with
   the venv's torch held by a constraint.

``python(version)`` returns the venv's interpreter. Code run in it must make vLLM take the CPU
platform first (there is no GPU here): ``CPU_PLATFORM_PRELUDE``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from artifacts import CACHE, _locked, fetch, member, run

CPU_TORCH = "2.13.0"
# Requirements never installed into the parser venv: torch itself (the CPU build is there), and
# packages that only exist for CUDA or pull a CUDA stack.
SKIP = re.compile(
    r"^(torch|torchaudio|torchvision|flashinfer.*|tilelang|apache-tvm-ffi|fastsafetensors|quack.*|tokenspeed.*|numba"
    r"|nvidia-.*|cuda-.*|xformers|triton.*|deep[-_]gemm.*|deep[-_]ep.*)$",
    re.I,
)
# vLLM picks its platform at import time; without a GPU it fails ("Failed to infer device type").
# Answering True for "cpu" in vllm.platforms.vllm_version_matches_substr selects the CPU platform.
CPU_PLATFORM_PRELUDE = """
import vllm.platforms as _volta_platforms
_volta_orig = _volta_platforms.vllm_version_matches_substr
_volta_platforms.vllm_version_matches_substr = lambda s: s == "cpu" or _volta_orig(s)
"""


def _requirements(wheel):
    meta = member(wheel, ".dist-info/METADATA").decode("utf-8", "replace")
    out = []
    for line in meta.splitlines():
        if not line.strip():
            break
        if not line.startswith("Requires-Dist:"):
            continue
        req = line.split(":", 1)[1].strip()
        if "extra ==" in req.replace("extra==", "extra =="):
            continue
        name = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1)
        if not SKIP.match(name):
            out.append(req)
    return out


def python(version):
    """The interpreter of the cached venv with real vLLM *version*; built on first use."""
    pyver = f"{sys.version_info[0]}{sys.version_info[1]}"
    venv = CACHE / f"venv-vllm-{version}-cpu-torch{CPU_TORCH}-py{pyver}"
    stamp = venv / "volta-real.json"
    with _locked(venv.name):
        if stamp.exists():
            return venv / "bin" / "python"
        wheel = fetch("vllm", version)
        if venv.exists():
            subprocess.run(["rm", "-rf", str(venv)], check=True)
        run([sys.executable, "-m", "venv", str(venv)], "python -m venv")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "install", "-q"]
        run([*pip, f"torch=={CPU_TORCH}"], f"pip install torch=={CPU_TORCH}")
        run([*pip, "--no-deps", str(wheel)], f"pip install --no-deps {wheel.name}")
        reqs = _requirements(wheel)
        constraint = venv / "constraints.txt"
        constraint.write_text(f"torch=={CPU_TORCH}\n", encoding="utf-8")
        run([*pip, "-c", str(constraint), *reqs], f"pip install the requirements of {wheel.name}")
        stamp.write_text(json.dumps({"vllm": version, "wheel": wheel.name, "torch": CPU_TORCH,
                                     "requirements": reqs}, indent=1) + "\n", encoding="utf-8")
        return venv / "bin" / "python"


if __name__ == "__main__":
    print(python(sys.argv[1] if len(sys.argv) > 1 else "0.21.0"))
