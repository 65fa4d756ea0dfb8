"""tests/lab/stubs.py: the stub libraries and extension modules the lab's stand-ins carry (built with gcc)."""

from __future__ import annotations

import ctypes
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

LAB = Path(__file__).resolve().parents[2] / "lab"
sys.path.insert(0, str(LAB))
import fatbin  # noqa: E402
import stubs  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is needed to build the stubs")
LDSO = "/lib64/ld-linux-x86-64.so.2"  # run with --inhibit-cache: a CUDA in ld.so.cache must not hide a miss


def readelf(path):
    return subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout


def needed(path):
    return [line.split("[", 1)[1].rstrip("]") for line in readelf(path).splitlines() if "(NEEDED)" in line]


def fat_binary(path):
    """(SASS SMs, PTX SMs) from the container headers in *path*."""
    data = path.read_bytes()
    off = data.find(struct.pack("<I", fatbin.MAGIC))
    sass, ptx = [], []
    while off >= 0 and off + 16 <= len(data) and struct.unpack_from("<I", data, off)[0] == fatbin.MAGIC:
        _m, _v, hsize, size = struct.unpack_from("<IHHQ", data, off)
        entry, end = off + hsize, off + hsize + size
        while entry < end:
            kind, _x, ehs, psize = struct.unpack_from("<HHIQ", data, entry)
            (sass if kind == fatbin.KIND_SASS else ptx).append(struct.unpack_from("<I", data, entry + 28)[0])
            entry += ehs + psize
        off = end
    return sass, ptx


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """libc10/libtorch (2.11.0), libcudart.so.12 and .13, and a _C needing torch + CUDA 13 with a fat binary."""
    d = tmp_path_factory.mktemp("stubs")
    stubs.torch_libraries(str(d), "2.11.0+cu126")
    for major, ver in (("12", "12.6.77"), ("13", "13.0.96")):
        stubs.build_cuda_library(str(d / f"libcudart.so.{major}"), f"libcudart.so.{major}", "nvidia-cuda-runtime", ver)
    blob = fatbin.section([([75, 80, 90], [75])])
    link = [(str(d), "libtorch.so"), (str(d), "libcudart.so.13"), (str(d), "libc10.so")]
    stubs.build_extension(str(d / "_C.abi3.so"), "_C", {"release": "0.21.0"}, fatbin.c_source(blob), link,
                          ["cudaRuntimeGetVersion"], [stubs.torch_abi_symbol("2.11.0")])
    return d


def import_c(d, preload):
    code = ("import ctypes, importlib.util, sys\n"
            f"for lib in {[str(d / p) for p in preload]!r}:\n"
            "    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)\n"
            f"spec = importlib.util.spec_from_file_location('_C', {str(d / '_C.abi3.so')!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print(m.cudaRuntimeGetVersion(), m.VOLTA_LAB_BUILD)\n")
    return subprocess.run([LDSO, "--inhibit-cache", sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)


def test_cuda_library_has_its_soname_the_marker_and_a_version_call(built):
    lib = built / "libcudart.so.12"
    assert "Library soname: [libcudart.so.12]" in readelf(lib)
    assert b"VOLTA_LAB_LIBRARY dist=nvidia-cuda-runtime version=12.6.77" in lib.read_bytes()
    version = ctypes.c_int(0)
    assert ctypes.CDLL(str(lib)).cudaRuntimeGetVersion(ctypes.byref(version)) == 0
    assert version.value == 12060


def test_builds_are_byte_for_byte_reproducible(built, tmp_path):
    again = tmp_path / "libcudart.so.12"
    stubs.build_cuda_library(str(again), "libcudart.so.12", "nvidia-cuda-runtime", "12.6.77")
    assert again.read_bytes() == (built / "libcudart.so.12").read_bytes()


def test_extension_needs_its_libraries_in_link_order_and_carries_the_fat_binary(built):
    assert needed(built / "_C.abi3.so")[:3] == ["libtorch.so", "libcudart.so.13", "libc10.so"]
    assert fat_binary(built / "_C.abi3.so") == ([75, 80, 90], [75])
    sections = subprocess.run(["readelf", "-S", str(built / "_C.abi3.so")], capture_output=True, text=True,
                              check=True).stdout
    assert ".nv_fatbin" in sections


def test_extension_imports_once_torch_and_its_cuda_runtime_are_loaded(built):
    proc = import_c(built, ["libc10.so", "libtorch.so", "libcudart.so.13"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1) == ["13000", '{"release": "0.21.0"}\n']


def test_missing_cuda_runtime_fails_with_the_dynamic_loaders_message(built):
    proc = import_c(built, ["libc10.so", "libtorch.so", "libcudart.so.12"])
    assert proc.returncode != 0
    assert "libcudart.so.13: cannot open shared object file: No such file or directory" in proc.stderr


def test_extension_for_another_torch_release_fails_with_undefined_symbol(built, tmp_path):
    stubs.torch_libraries(str(tmp_path), "2.10.0+cu128")
    shutil.copy(built / "_C.abi3.so", tmp_path / "_C.abi3.so")
    shutil.copy(built / "libcudart.so.13", tmp_path / "libcudart.so.13")
    proc = import_c(tmp_path, ["libc10.so", "libtorch.so", "libcudart.so.13"])
    assert proc.returncode != 0
    assert "undefined symbol: volta_lab_torch_abi_2_11_0" in proc.stderr


def test_torch_abi_symbol_ignores_the_local_tag():
    assert stubs.torch_abi_symbol("2.11.0+cu126") == stubs.torch_abi_symbol("2.11.0") == "volta_lab_torch_abi_2_11_0"


def test_cuda_version_int_is_the_cudart_version_form():
    assert [stubs.cuda_version_int(v) for v in ("12.6.77", "12.8.90", "13.0.96")] == [12060, 12080, 13000]


def test_missing_python_headers_name_the_package(monkeypatch):
    monkeypatch.setattr(stubs.sysconfig, "get_paths", lambda: {"include": "/nonexistent"})
    with pytest.raises(stubs.StubError, match="install python3-dev"):
        stubs.python_include()


def test_compile_error_names_the_output(tmp_path):
    with pytest.raises(stubs.StubError, match=r"gcc failed for bad\.so"):
        stubs.compile_shared("this is not C;\n", str(tmp_path / "bad.so"))
