"""volta.serving test-lab stand-in for torch, not the real package.

Only what the lab's roles and checks ask of torch: versions, the CUDA arch
list of the build, NCCL version, device capability.  No tensors.
"""

from torch import _volta_lab_build as _build
from torch import cuda, version  # noqa: F401

__version__ = _build.VERSION
VOLTA_LAB_STAND_IN = True
