"""volta.serving test-lab stand-in for torch, not the real package.

Only what the lab's roles and checks ask of torch: versions, the CUDA arch
list of the build, NCCL version, device capability.  No tensors.

Like real torch, ``import torch`` loads its own libraries (stub ``torch/lib/libc10.so`` and
``libtorch.so``) and the CUDA runtime of its ``nvidia-*`` wheels (``libcudart.so.N``,
``libnvrtc.so.N``) with RTLD_GLOBAL (real torch: ``_load_global_deps`` / ``_preload_cuda_deps``), so
an extension that needs ``libcudart.so.12`` imports after ``import torch`` when this torch brings
CUDA 12, and otherwise fails with the dynamic loader's own message.
"""

import ctypes as _ctypes
import os as _os
import sys as _sys

from torch import _volta_lab_build as _build


def _load_global_deps():
    lib = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib")
    paths = [_os.path.join(lib, name) for name in ("libc10.so", "libtorch.so")]
    for rel in getattr(_build, "CUDA_LIBS", ()):
        found = [_os.path.join(d, rel) for d in _sys.path if d and _os.path.isfile(_os.path.join(d, rel))]
        paths += found[:1]
    for path in paths:
        if not _os.path.isfile(path):
            continue  # not installed (e.g. --no-deps): real torch would fail here; the stand-in goes on
        try:
            _ctypes.CDLL(path, mode=_ctypes.RTLD_GLOBAL)
        except OSError:
            pass  # a text placeholder of an older lab build


_load_global_deps()

from torch import cuda, version  # noqa: E402, F401

__version__ = _build.VERSION
VOLTA_LAB_STAND_IN = True
