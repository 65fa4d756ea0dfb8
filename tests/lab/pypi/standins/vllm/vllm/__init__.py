"""volta.serving test-lab stand-in for vLLM, not the real package.

`vllm serve` runs an OpenAI-compatible simulator; see vllm._volta_lab.
"""

from vllm._volta_lab import build_info as _build_info

__version__ = _build_info()["version"]
__version_tuple__ = tuple(int(p) if p.isdigit() else p for p in __version__.split("."))
VOLTA_LAB_STAND_IN = True
