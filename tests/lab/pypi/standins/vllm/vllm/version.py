from vllm import __version__, __version_tuple__  # noqa: F401
