# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which official torch wheels keep sm_70 (Volta) kernels, and the version readers the table needs.

Pure Python, no Ansible imports. Module side of the torch rules: ``_index`` (module dist_metadata) proposes
the CUDA tags that keep Volta from it; the serving plan's software rules (plugin_utils/_rules_software.py)
judge the pinned builds with the same table.
"""

from __future__ import annotations

import re

FIRST_CUDA_WITHOUT_SM70 = 13

# Which official torch wheels carry sm_70 kernels, by (torch minor, CUDA tag of the PyTorch index):
# recorded from PyTorch's "CUDA Support Matrix" (RELEASE.md) and the RFCs that changed it. A
# combination not listed here is not known; the binary audit after install decides. Every cu13x
# build lacks sm_70 (CUDA 13 cannot compile for Volta), whatever the torch release.
TORCH_SM70_BUILDS = {
    # pytorch/pytorch#147607 took sm_70 out of the cu128 build for 2.7.
    (2, 7): {"cu126": True, "cu128": False},
    # pytorch/pytorch#158126, #160269: Volta kept in the 12.8 and 12.9 builds of 2.8.
    (2, 8): {"cu126": True, "cu128": True, "cu129": True},
    # RELEASE.md matrix "For Release 2.9 and 2.10" (pytorch/pytorch#164471): 12.6 and 12.8 have Volta.
    (2, 9): {"cu126": True, "cu128": True},
    (2, 10): {"cu126": True, "cu128": True},
    # pytorch/pytorch#172352 (RFC) and #175253: Volta dropped from the 12.8 build in 2.11.
    (2, 11): {"cu126": True, "cu128": False},
    # pytorch/pytorch#182849: 12.8 removed in 2.12; 12.6 (Legacy) keeps Volta.
    (2, 12): {"cu126": True},
    (2, 13): {"cu126": True},
    # pytorch/pytorch#190355: 12.6 kept as Legacy in 2.14; #190385 proposes removing it in 2.15.
    (2, 14): {"cu126": True},
}

TORCH_SM70_SOURCE = "PyTorch's CUDA support matrix (RELEASE.md) and RFCs pytorch/pytorch#157517, #172352, #190385"
_VERSION_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_CUDA_TAG_RE = re.compile(r"^cu(\d+)(\d)$")


def parse_version(value):
    """``"2.11.0+cu126"`` -> ``(2, 11, 0)``; ``580`` -> ``(580,)``; ``None`` when unreadable."""
    if value is None or isinstance(value, bool):
        return None
    match = _VERSION_RE.match(str(value))
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def parse_cuda_tag(value):
    """``"cu126"`` -> ``(12, 6)``, ``"cu130"`` -> ``(13, 0)``; ``None`` when unreadable."""
    match = _CUDA_TAG_RE.match(str(value or "").strip().lower())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


def torch_keeps_sm70(torch_version, cuda_tag):
    """Whether the official torch *torch_version* wheels of index *cuda_tag* carry sm_70 kernels.

    ``True`` or ``False`` where recorded (``TORCH_SM70_BUILDS``; every cu13x is ``False``), ``None``
    where not known (or either value is unreadable).
    """
    torch_v, tag = parse_version(torch_version), parse_cuda_tag(cuda_tag)
    if torch_v is None or tag is None:
        return None
    if tag[0] >= FIRST_CUDA_WITHOUT_SM70:
        return False
    return TORCH_SM70_BUILDS.get(torch_v[:2], {}).get(f"cu{tag[0]}{tag[1]}")


def sm70_cuda_tags(torch_version):
    """The CUDA tags whose wheels of *torch_version* are recorded to keep sm_70 (``[]`` when none)."""
    torch_v = parse_version(torch_version)
    builds = TORCH_SM70_BUILDS.get(torch_v[:2] if torch_v else None, {})
    return sorted(tag for tag, keeps in builds.items() if keeps)
