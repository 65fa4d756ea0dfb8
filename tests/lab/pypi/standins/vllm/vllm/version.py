from vllm import __version__, __version_tuple__

__all__ = ["__version__", "__version_tuple__"]
