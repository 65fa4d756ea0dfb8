"""Real ELF stand-ins for the lab: stub CUDA/torch shared libraries and CUDA-shaped Python extensions.

volta.serving test-lab stand-in code (stdlib only; needs gcc, and Python.h for extensions). It is used
by tests/lab/pypi/build (nvidia-* wheels, the torch stand-in's ``torch/lib``, the prebuilt vLLM and
1Cat-vLLM wheels), by tests/lab/apt/build (``lib64`` of the CUDA toolkit stand-ins) and, copied into
the stand-in vLLM sdist next to ``fatbin.py``, by that sdist's ``setup.py`` on a lab host.

Recorded from the real files (``readelf -d`` of vllm 0.19.1/0.21.0 wheels, 2026-11-30):
``vllm/_C.abi3.so`` needs ``libtorch.so``, ``libcudart.so.<12|13>``, ``libc10.so`` (and
``libcuda.so.1``, ``libtorch_cpu.so``, ``libtorch_cuda.so``, ``libc10_cuda.so``: not reproduced, see
tests/lab/pypi/README.md); its ``.nv_fatbin`` holds SASS and PTX per SM (tests/lab/fatbin.py).

Nothing here contains GPU code or a working library: a stub library exports a marker string, a
version query and the symbols listed by its caller; an extension module exports ``PyInit_<name>``
(limited API, abi3) and references the libraries it was linked with, so the dynamic loader reports a
missing one exactly as it would for the real file ("libcudart.so.13: cannot open shared object file").
Builds are deterministic: fixed flags, stripped, no build-id, sources compiled from a relative path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sysconfig
import tempfile

GCC_FLAGS = ["-O2", "-fPIC", "-shared", "-s", "-fno-ident", "-Wl,--build-id=none", "-Wl,--hash-style=gnu"]
STAND_IN = "volta.serving test-lab stand-in, not NVIDIA/PyTorch/vLLM software"


class StubError(Exception):
    """gcc or the Python headers are missing, or a compile failed."""


def _c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def symbol_for(text):
    """A C identifier made of *text* (``2.11.0`` -> ``2_11_0``)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def torch_abi_symbol(torch_version):
    """The data symbol a torch stand-in's ``libtorch.so`` exports for its release (``2.11.0+cu126`` -> 2.11.0).

    A stand-in extension built for another torch release references a symbol the installed
    ``libtorch.so`` lacks, so its import fails with "undefined symbol", like a real vLLM ``_C`` on the
    wrong torch.
    """
    base = torch_version.split("+", 1)[0]
    return f"volta_lab_torch_abi_{symbol_for(base)}"


def library_source(soname, marker, version_fn=None, version=0, data_symbols=()):
    """C source of a stub shared library: a marker string, optionally ``int version_fn(int *)`` and data symbols."""
    lines = [f"/* {STAND_IN}: stub {soname} (tests/lab/stubs.py). */",
             f"__attribute__((used)) static const char volta_lab_marker[] = {_c_string(marker)};"]
    if version_fn:
        lines.append(f"int {version_fn}(int *v) {{ if (v) *v = {int(version)}; return 0; }}")
    for sym in data_symbols:
        lines.append(f"const char {sym}[] = {_c_string(soname)};")
    return "\n".join(lines) + "\n"


def extension_source(module, info, fatbin_c="", calls=(), data_refs=()):
    """C source of an importable abi3 extension *module* (``PyInit_<module>``).

    *info* (a dict) becomes the module attribute ``VOLTA_LAB_BUILD`` (JSON text); *calls* are
    ``int fn(int *)`` functions of linked libraries exposed as module functions (e.g.
    ``cudaRuntimeGetVersion``); *data_refs* are data symbols the module needs at load time (the
    torch ABI symbol); *fatbin_c* is ``fatbin.c_source()`` output.
    """
    out = [f"/* {STAND_IN}: extension {module} (tests/lab/stubs.py). */",
           "#define Py_LIMITED_API 0x03080000", "#include <Python.h>", ""]
    for sym in data_refs:
        out.append(f"extern const char {sym}[];")
    if data_refs:
        out.append("__attribute__((used)) const void *volta_lab_needed_data[] = {"
                   + ", ".join(data_refs) + "};")
    methods = []
    for fn in calls:
        out += [f"extern int {fn}(int *);",
                f"static PyObject *call_{fn}(PyObject *self, PyObject *unused) {{",
                f"    int v = 0; {fn}(&v); return PyLong_FromLong(v);", "}"]
        methods.append(f'    {{"{fn}", call_{fn}, METH_NOARGS, "stub: calls {fn} of the linked library"}},')
    out += ["static PyMethodDef methods[] = {", *methods, "    {NULL, NULL, 0, NULL}", "};",
            "static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, " + _c_string(module) + ", "
            + _c_string(STAND_IN) + ", -1, methods, NULL, NULL, NULL, NULL};",
            f"PyMODINIT_FUNC PyInit_{module}(void) {{",
            "    PyObject *m = PyModule_Create(&def);",
            "    if (m && PyModule_AddStringConstant(m, \"VOLTA_LAB_BUILD\", "
            + _c_string(json.dumps(info, sort_keys=True)) + ") < 0) { Py_DECREF(m); return NULL; }",
            "    return m;", "}", ""]
    return "\n".join(out) + fatbin_c


def python_include():
    """The directory of Python.h for this interpreter, or StubError naming the package to install."""
    inc = sysconfig.get_paths().get("include") or ""
    if not os.path.exists(os.path.join(inc, "Python.h")):
        raise StubError(f"Python.h not found in {inc or '(no include dir)'}: install python3-dev "
                        "(tests/lab/setup-controller installs it)")
    return inc


def compile_shared(source, out_path, soname=None, link=(), include_dirs=(), cc="gcc"):
    """Compile C *source* into the shared object *out_path*.

    *link* is a list of (directory, file name) pairs: each becomes a DT_NEEDED entry in that order
    (``-L dir -l:file``, ``--no-as-needed``).
    """
    with tempfile.TemporaryDirectory(prefix="volta-lab-cc-") as tmp:
        src = "stub.c"
        with open(os.path.join(tmp, src), "w", encoding="utf-8") as fh:
            fh.write(source)
        cmd = [cc, *GCC_FLAGS, *(f"-I{d}" for d in include_dirs), "-o", "out.so", src]
        if soname:
            cmd.append(f"-Wl,-soname,{soname}")
        cmd.append("-Wl,--no-as-needed")
        for directory, fname in link:
            cmd += [f"-L{directory}", f"-l:{fname}"]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise StubError(f"{cc} not found: install gcc (tests/lab/setup-controller installs it)") from None
        if proc.returncode != 0:
            raise StubError(f"{cc} failed for {os.path.basename(out_path)}: "
                            + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        with open(os.path.join(tmp, "out.so"), "rb") as src_fh, open(out_path, "wb") as dst:
            dst.write(src_fh.read())
    return out_path


def build_library(out_path, soname, marker, version_fn=None, version=0, data_symbols=()):
    """Build a stub shared library with SONAME *soname* at *out_path*; returns its bytes."""
    compile_shared(library_source(soname, marker, version_fn, version, data_symbols), out_path, soname=soname)
    with open(out_path, "rb") as fh:
        return fh.read()


# CUDA runtime libraries: file name prefix -> (version function, how the version integer is formed)
CUDA_VERSION_FN = {"libcudart": "cudaRuntimeGetVersion", "libnvrtc": "nvrtcVersionInt"}


def cuda_version_int(version):
    """``12.6.77`` -> 12060 (the CUDART_VERSION form: major*1000 + minor*10)."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return major * 1000 + minor * 10


def build_cuda_library(out_path, soname, dist, version):
    """A stub ``libcudart.so.N`` / ``libnvrtc.so.N`` carrying the ``VOLTA_LAB_LIBRARY`` marker."""
    stem = soname.split(".so", 1)[0]
    marker = f"{STAND_IN}\nVOLTA_LAB_LIBRARY dist={dist} version={version}\n"
    return build_library(out_path, soname, marker, CUDA_VERSION_FN.get(stem), cuda_version_int(version))


def build_extension(out_path, module, info, fatbin_c="", link=(), calls=(), data_refs=()):
    """Build an importable abi3 extension *module* at *out_path* (see extension_source, compile_shared)."""
    source = extension_source(module, info, fatbin_c, calls, data_refs)
    compile_shared(source, out_path, link=link, include_dirs=[python_include()])
    with open(out_path, "rb") as fh:
        return fh.read()


def torch_libraries(outdir, torch_version):
    """Stub ``libc10.so`` and ``libtorch.so`` (exporting the release's ABI symbol) in *outdir*.

    Real torch ships them in ``torch/lib``; every vLLM extension has them in DT_NEEDED.
    """
    out = {}
    for name, syms in (("libc10.so", ()), ("libtorch.so", (torch_abi_symbol(torch_version),))):
        marker = f"{STAND_IN}\nVOLTA_LAB_LIBRARY dist=torch version={torch_version} ({name})\n"
        out[name] = build_library(os.path.join(outdir, name), name, marker, data_symbols=syms)
    return out
