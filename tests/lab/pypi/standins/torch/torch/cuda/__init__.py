"""torch.cuda of the volta.serving test-lab stand-in.

No GPU is ever used.  CUDA is "available" only when the environment says so:
  VOLTA_LAB_CUDA_AVAILABLE=1        is_available() -> True
  VOLTA_LAB_CUDA_DEVICE_COUNT=N     device_count() (default 1 when available)
  VOLTA_LAB_CUDA_CAPABILITY=7.0     get_device_capability() (default 7.0, a V100)
  VOLTA_LAB_CUDA_DEVICE_NAME=...    get_device_name() (default Tesla V100-SXM2-32GB)
Like the real torch, touching a device whose capability is missing from
get_arch_list() warns that the GPU is not compatible with this build.
"""

import os
import warnings

from torch import _volta_lab_build as _build
from torch.cuda import nccl  # noqa: F401

_warned = False


def _env_true(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def is_available():
    return _env_true("VOLTA_LAB_CUDA_AVAILABLE")


def device_count():
    if not is_available():
        return 0
    return int(os.environ.get("VOLTA_LAB_CUDA_DEVICE_COUNT", "1"))


def get_arch_list():
    return list(_build.ARCH_LIST)


def _capability():
    raw = os.environ.get("VOLTA_LAB_CUDA_CAPABILITY", "7.0")
    major, _sep, minor = raw.partition(".")
    return int(major), int(minor or 0)


def _lazy_init():
    global _warned
    if not is_available():
        raise RuntimeError(
            "Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from "
            "http://www.nvidia.com/Download/index.aspx")
    major, minor = _capability()
    arch = f"sm_{major}{minor}"
    if arch not in _build.ARCH_LIST and not _warned:
        _warned = True
        warnings.warn(
            f"\n{get_device_name()} with CUDA capability {arch} is not compatible "
            "with the current PyTorch installation.\nThe current PyTorch install "
            f"supports CUDA capabilities {' '.join(_build.ARCH_LIST)}.\n",
            UserWarning, stacklevel=3)


def _check_index(device):
    index = 0 if device is None else int(getattr(device, "index", device) or 0)
    if index >= device_count():
        raise AssertionError("Invalid device id")
    return index


def get_device_capability(device=None):
    _lazy_init()
    _check_index(device)
    return _capability()


def get_device_name(device=None):
    if is_available():
        _check_index(device)
    return os.environ.get("VOLTA_LAB_CUDA_DEVICE_NAME", "Tesla V100-SXM2-32GB")


def current_device():
    _lazy_init()
    return 0


def init():
    _lazy_init()
