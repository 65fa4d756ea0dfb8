#!/usr/bin/env python3
"""Load fat binaries written by tests/lab/fatbin.py on a real GPU through the driver API (libcuda).

Proves two things the lab cannot: the real driver accepts the fat-binary layout the lab's stand-ins
use (recorded from a real vLLM extension), and it applies the rule volta.serving's binary audit
uses: PTX for an SM at or below the GPU's is JIT-compiled and runs; SASS for another SM and PTX
for a newer SM give no usable code (CUDA_ERROR_NO_BINARY_FOR_GPU). Prints one JSON object.

    python3 tests/device/fatbin_jit.py
"""

import ctypes
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lab"))
import fatbin

# A kernel written by hand for this check: data[threadIdx.x] += 1 (32-bit ints).
PTX = """.version {isa}
.target sm_{sm}
.address_size 64

.visible .entry volta_add_one(.param .u64 volta_add_one_data)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [volta_add_one_data];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r2, [%rd4];
    add.s32 %r2, %r2, 1;
    st.global.u32 [%rd4], %r2;
    ret;
}}
"""
N = 32


def ptx(sm, isa):
    return PTX.format(sm=sm, isa=isa).encode() + b"\0"


def check(cuda, call, *args):
    rc = getattr(cuda, call)(*args)
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        text = name.value.decode() if name.value is not None else ""
        raise RuntimeError(f"{call}: {rc} {text}")


def run_case(cuda, blob):
    module = ctypes.c_void_p()
    try:
        image = ctypes.create_string_buffer(blob, len(blob))
        check(cuda, "cuModuleLoadData", ctypes.byref(module), ctypes.cast(image, ctypes.c_void_p))
    except RuntimeError as exc:
        return {"loaded": False, "error": str(exc)}
    func = ctypes.c_void_p()
    check(cuda, "cuModuleGetFunction", ctypes.byref(func), module, b"volta_add_one")
    host = (ctypes.c_int32 * N)(*range(N))
    dev = ctypes.c_uint64()
    check(cuda, "cuMemAlloc_v2", ctypes.byref(dev), ctypes.c_size_t(4 * N))
    check(cuda, "cuMemcpyHtoD_v2", dev, host, ctypes.c_size_t(4 * N))
    arg = ctypes.c_uint64(dev.value)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    check(cuda, "cuLaunchKernel", func, 1, 1, 1, N, 1, 1, 0, None, ctypes.cast(params, ctypes.c_void_p), None)
    check(cuda, "cuCtxSynchronize")
    check(cuda, "cuMemcpyDtoH_v2", host, dev, ctypes.c_size_t(4 * N))
    check(cuda, "cuMemFree_v2", dev)
    check(cuda, "cuModuleUnload", module)
    return {"loaded": True, "ran": list(host) == [i + 1 for i in range(N)]}


def main():
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    cuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    cuda.cuModuleUnload.argtypes = [ctypes.c_void_p]
    cuda.cuCtxSetCurrent.argtypes = [ctypes.c_void_p]
    check(cuda, "cuInit", 0)
    device = ctypes.c_int()
    check(cuda, "cuDeviceGet", ctypes.byref(device), 0)
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(cuda, "cuDeviceGetAttribute", ctypes.byref(major), 75, device)  # COMPUTE_CAPABILITY_MAJOR
    check(cuda, "cuDeviceGetAttribute", ctypes.byref(minor), 76, device)  # COMPUTE_CAPABILITY_MINOR
    ctx = ctypes.c_void_p()
    check(cuda, "cuDevicePrimaryCtxRetain", ctypes.byref(ctx), device)
    check(cuda, "cuCtxSetCurrent", ctx)
    cases = {
        "plain_ptx_70_control": ptx(70, "6.0"),
        "ptx_compute_70_only": fatbin.container(ptx=(70,), ptx_text={70: ptx(70, "6.0")}),
        "sass_sm_70_75_only": fatbin.container(sass=(70, 75)),
        "ptx_compute_100_only": fatbin.container(ptx=(100,), ptx_text={100: ptx(100, "8.6")}),
    }
    out = {"gpu_sm": major.value * 10 + minor.value}
    for name, blob in cases.items():
        print(f"case {name}: {len(blob)} bytes", file=sys.stderr, flush=True)
        out[name] = run_case(cuda, blob)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
