# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's nvidia-smi stand-in (tests/lab/gpu-sim) under a temporary root, for the GPU fact and health tests.

The files are the ones the simulator reads below $VOLTA_GPU_SIM_ROOT (tests/lab/README.md, "GPU simulator
contract"): the profile name, the user-space driver version, the loaded module's /proc text and, when
faults are given, the state file that carries them.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SIMULATOR = REPO / "tests" / "lab" / "gpu-sim" / "nvidia-smi"
PROPRIETARY = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Release Build  (lab)\n"


def write_sim_root(root, profile, faults=None):
    """Write a simulated host with GPU profile *profile* below *root*; *faults* (a mapping) into its state."""
    files = [("etc/volta-lab/gpu-profile", profile + "\n"),
             ("usr/share/volta-lab/gpu-sim/library-version", "580.95.05\n"),
             ("var/lib/volta-lab/driver/version", PROPRIETARY)]
    if faults is not None:
        files.append(("var/lib/volta-lab/gpu-sim/state.json", json.dumps({"faults": faults})))
    for rel, text in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root
