"""triton, or a placeholder when it is not installed (test-lab stand-in)."""

try:
    import triton
    import triton.language as tl
except ImportError:  # the lab never launches a kernel
    class _Placeholder:
        int64 = "int64"
        int32 = "int32"

        def __getattr__(self, name):
            return _Placeholder()

        def __call__(self, *args, **kwargs):
            return args[0] if len(args) == 1 and callable(args[0]) else _Placeholder()

    class _TritonPlaceholder(_Placeholder):
        @staticmethod
        def jit(fn=None, **kwargs):
            return fn if fn is not None else (lambda f: f)

    triton = _TritonPlaceholder()
    tl = _Placeholder()

__all__ = ["tl", "triton"]
