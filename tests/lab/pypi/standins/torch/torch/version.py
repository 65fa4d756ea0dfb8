"""torch.version of the volta.serving test-lab stand-in."""

from torch import _volta_lab_build as _build

__version__ = _build.VERSION
cuda = _build.CUDA
git_version = "0000000000000000000000000000000000000000"
hip = None
debug = False
