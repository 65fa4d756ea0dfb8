"""torch.cuda.nccl of the volta.serving test-lab stand-in."""

from torch import _volta_lab_build as _build


def version():
    """The NCCL version this torch build was "built" against: the version of
    the nvidia-nccl-cuXX wheel its metadata pins (a tuple, like the real one)."""
    return tuple(_build.NCCL_VERSION)


def is_available(tensors=None):
    return True
