# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the binary audit: tables of sonames, SMs and fat-binary sections, and real ELF objects.

The ELF objects are built with gcc from the C source tests/lab/fatbin.py writes (a ``.nv_fatbin``
section of the real layout) and linked against stub libraries whose sonames are the CUDA libraries'
(libcudart.so.12, ...), so the audit reads what the linker really writes. Without gcc those tests
are skipped.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._binary_audit import (
    SITE_PROBE,
    audit,
    cuda_major,
    cuda_majors,
    embedded,
    fatbin,
    find_files,
    inspect,
    parse_sm,
    read_torch_version,
    runnable,
)

REPO = Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("lab_fatbin", REPO / "tests" / "lab" / "fatbin.py")
fb = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fb)
GCC = shutil.which("gcc")
needs_gcc = pytest.mark.skipif(GCC is None, reason="gcc is not installed: no ELF objects can be built")
STUB_SONAMES = ("libcudart.so.12", "libcudart.so.13", "libnvrtc.so.13", "libcufft.so.12", "libcuda.so.1",
                "libnccl.so.2")


@pytest.mark.parametrize("soname, majors", [
    ("libcudart.so.12", (12,)), ("libcudart.so.13", (13,)), ("libcudart.so.11.0", (11,)),
    ("libnvrtc.so.13", (13,)), ("libnvrtc-builtins.so.12.6", (12,)), ("libcublas.so.12", (12,)),
    ("libcublasLt.so.13", (13,)), ("libnvJitLink.so.12", (12,)), ("libcupti.so.13", (13,)),
    ("libcufft.so.11", (12,)), ("libcufft.so.12", (13,)), ("libcusparse.so.12", (12, 13)),
    ("libcusolver.so.11", (11, 12)), ("libcusolver.so.12", (13,)),
    ("libcuda.so.1", ()), ("libnccl.so.2", ()), ("libcudnn.so.9", ()), ("libcurand.so.10", ()),
    ("libcusparseLt.so.0", ()), ("libc.so.6", ()), ("libtorch_cuda.so", ()), ("cudart", ()),
])
def test_cuda_majors(soname, majors):
    assert cuda_majors(soname) == majors


@pytest.mark.parametrize("text, sm", [("7.0", 70), ("7.5", 75), ("8.6", 86), ("12.0", 120), (" 9.0 ", 90)])
def test_parse_sm(text, sm):
    assert parse_sm(text) == sm


@pytest.mark.parametrize("text", ["7", "sm_70", "7.0.1", "", "seven"])
def test_parse_sm_refuses(text):
    with pytest.raises(ValueError, match=r"is not MAJOR\.MINOR"):
        parse_sm(text)


@pytest.mark.parametrize("text, major", [("12.6", 12), ("13.0", 13), ("11.8", 11), (None, None), ("", None)])
def test_cuda_major(text, major):
    assert cuda_major(text) == major


@pytest.mark.parametrize("sass, ptx, sm, ok", [
    ([70], [], 70, True),     # exact SASS
    ([72], [], 70, False),    # SASS of a higher minor does not run on 7.0
    ([75, 80], [], 70, False),
    ([61], [], 70, False),    # SASS of an older major does not run
    ([], [70], 70, True),     # PTX is compiled by the driver for the GPU
    ([], [60], 70, True),
    ([], [75], 70, False),    # PTX newer than the GPU
    ([70], [], 75, True),     # sm_70 SASS runs on 7.5
    ([80], [], 86, True),
    ([86], [], 80, False),
    ([90], [], 100, False),   # another major
    ([], [80], 120, True),
])
def test_runnable(sass, ptx, sm, ok):
    assert runnable(sass, ptx, sm) is ok


def _walk(blob):
    return fatbin(io.BytesIO(b"JUNKJUNK" + blob), 8, len(blob))


def _raw_container(esize, entries=b""):
    return struct.pack("<IHHQ", fb.MAGIC, 1, 16, esize) + entries


ONE = fb.container(sass=(70, 75), ptx=(80,))


@pytest.mark.parametrize("blob, containers, error", [
    (ONE, [([70, 75], [80])], None),
    (ONE + fb.container(sass=(90,)), [([70, 75], [80]), ([90], [])], None),
    (ONE + b"\0" * 24 + fb.container(ptx=(70,)), [([70, 75], [80]), ([], [70])], None),  # zero padding
    (b"", [], None),
    (b"\0" * 64, [], None),
    (b"garbage!" * 8, [], "no container at section offset 0x0"),
    (ONE + b"garbage!" * 2, [([70, 75], [80])], f"no container at section offset {len(ONE):#x}"),
    (ONE[:10], [], "no container at section offset 0x0"),                     # cut in the container header
    (ONE[:100], [([], [])], "claims"),                                         # cut in the first entry
    (ONE[:-8], [([70, 75], [])], "claims"),                                    # cut in the last payload
    (_raw_container(32, struct.pack("<HHIQ", 2, 0x101, 8, 0) + b"\0" * 16), [([], [])], "does not fit"),
    (_raw_container(64, fb.entry(2, 70)), [([], [])], "does not fit"),        # entry larger than its container
])
def test_fatbin_walk(blob, containers, error):
    got = _walk(blob)
    assert got["containers"] == containers
    if error is None:
        assert got["errors"] == []
    else:
        assert got["errors"] and error in got["errors"][0]


@pytest.mark.parametrize("text, expected", [
    ("__version__ = '2.11.0+cu126'\ncuda: Optional[str] = '12.6'\n", ("2.11.0+cu126", "12.6")),
    ("__version__ = '2.4.0'\ncuda = '12.1'\n", ("2.4.0", "12.1")),
    ('__version__ = "2.13.0+cpu"\ncuda: Optional[str] = None\n', ("2.13.0+cpu", None)),
    ("debug = False\n", (None, None)),
])
def test_read_torch_version(text, expected):
    assert read_torch_version(text) == expected


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    """Stub shared libraries named like the CUDA libraries (only their soname matters)."""
    if GCC is None:
        pytest.skip("gcc is not installed: no ELF objects can be built")
    out = tmp_path_factory.mktemp("stubs")
    (out / "stub.c").write_text("int volta_stub(void) { return 0; }\n")
    for soname in STUB_SONAMES:
        subprocess.run([GCC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out / soname), str(out / "stub.c")],
                       check=True)
    return out


def build(stubs, target, containers=(), needed=(), shared=True, blob=None):
    """Compile a shared object (or with shared=False, a relocatable object) with a fat binary and DT_NEEDED."""
    target.parent.mkdir(parents=True, exist_ok=True)
    src = target.with_suffix(".c")
    blob = fb.section(list(containers)) if blob is None else blob
    src.write_text((fb.c_source(blob) if blob else "") + "int volta_test(void) { return 1; }\n")
    if not shared:
        subprocess.run([GCC, "-c", "-fPIC", "-o", str(target), str(src)], check=True)
        return target
    libs = [f"-l:{n}" for n in needed]
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(target), str(src), f"-L{stubs}", "-Wl,--no-as-needed", *libs],
                   check=True)
    return target


TORCH = ("12.6", "2.11.0+cu126")
CASES = [
    # name, containers, needed, problem message (None: fine), counted as CUDA
    ("fine", [((70, 75, 80), (80,))], ["libcudart.so.12"], None, True),
    ("cuda13", [((75, 80), (80,))], ["libcudart.so.13", "libcuda.so.1"],
     "x.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code for sm_70 (lowest sm_75)",
     True),
    ("nvrtc13", [], ["libnvrtc.so.13"], "x.so needs libnvrtc.so.13 but torch 2.11.0+cu126 brings CUDA 12", True),
    ("cufft12", [], ["libcufft.so.12"],
     "x.so needs libcufft.so.12 (CUDA 13) but torch 2.11.0+cu126 brings CUDA 12", True),
    ("ptx70", [((), (70,))], ["libcudart.so.12"], None, True),
    ("ptx80", [((), (80,))], [], "x.so has no code for sm_70 (lowest compute_80)", True),
    ("sass72", [((72,), ())], [], "x.so has no code for sm_70 (lowest sm_72)", True),
    ("one_of_two", [((75,), ()), ((70,), ())], [], None, True),   # a file passes when any code runs
    ("driver_only", [], ["libcuda.so.1", "libnccl.so.2"], None, False),
    ("plain", [], [], None, False),
]


@needs_gcc
@pytest.mark.parametrize("name, containers, needed, message, counted", CASES, ids=[c[0] for c in CASES])
def test_audit_real_elf(stubs, tmp_path, name, containers, needed, message, counted):
    build(stubs, tmp_path / "x.so", containers, needed)
    result = audit([("x.so", str(tmp_path / "x.so"))], 70, *TORCH)
    assert result["files"]["checked"] == 1 and result["files"]["cuda"] == int(counted)
    assert result["problems"] == ([message] if message else [])
    assert result["ok"] is (message is None) and result["read_errors"] == []


@needs_gcc
def test_inspect_reads_what_the_linker_wrote(stubs, tmp_path):
    path = build(stubs, tmp_path / "x.so", [((70,), (70,)), ((80, 90), ())], ["libcudart.so.12", "libcuda.so.1"])
    report = inspect(path)
    assert report["elf"] is True and report["errors"] == []
    assert report["needed"][:2] == ["libcudart.so.12", "libcuda.so.1"] and "libc.so.6" in report["needed"]
    assert report["containers"] == [([70], [70]), ([80, 90], [])]


@needs_gcc
def test_object_without_dynamic_section(stubs, tmp_path):
    report = inspect(build(stubs, tmp_path / "x.o", [((70,), ())], shared=False))
    assert report == {"elf": True, "needed": [], "containers": [([70], [])], "errors": []}


@needs_gcc
def test_no_section_headers_reads_the_dynamic_segment(stubs, tmp_path):
    path = build(stubs, tmp_path / "x.so", [((70,), ())], ["libcudart.so.13"])
    data = bytearray(path.read_bytes())
    data[0x28:0x30] = b"\0" * 8      # e_shoff = 0: as if the section headers were stripped
    data[0x3C:0x40] = b"\0" * 4      # e_shnum, e_shstrndx
    path.write_bytes(bytes(data))
    report = inspect(path)
    # no .nv_fatbin section to name it: the container is found by its magic (embedded())
    assert "libcudart.so.13" in report["needed"] and report["containers"] == [([70], [])] and report["errors"] == []


@needs_gcc
@pytest.mark.parametrize("blob, error", [
    (b"garbage!" * 4, "no container at section offset 0x0"),
    (fb.container(sass=(70,))[:-8], "claims"),
])
def test_damaged_fat_binary_is_reported_not_raised(stubs, tmp_path, blob, error):
    build(stubs, tmp_path / "x.so", needed=["libcudart.so.12"], blob=blob)
    result = audit([("x.so", str(tmp_path / "x.so"))], 70, *TORCH)
    assert result["ok"] is True and result["read_errors"] and error in result["read_errors"][0]
    assert result["read_errors"][0].startswith("x.so - fat binary: ")


@needs_gcc
def test_truncated_elf_is_a_problem(stubs, tmp_path):
    path = build(stubs, tmp_path / "x.so", [((70,), ())], ["libcudart.so.12"])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    result = audit([("x.so", str(path))], 70, *TORCH)
    assert result["ok"] is False
    assert result["problems"][0].startswith("x.so cannot be read (unreadable ELF: truncated: ")


@pytest.mark.parametrize("content, problem", [
    (b"/* GNU ld script */\nGROUP ( libc.so.6 )\n", None),         # not ELF: skipped
    (b"", None),
    (b"\x7fELF", "x.so cannot be read (unreadable ELF: truncated: the ELF header has 4 of 64 bytes)"),
    (b"\x7fELF\x01\x01\x01" + b"\0" * 57,
     "x.so cannot be read (unreadable ELF: not an ELF64 little-endian object (class 1, data 1))"),
])
def test_not_elf_or_broken_header(tmp_path, content, problem):
    (tmp_path / "x.so").write_bytes(content)
    result = audit([("x.so", str(tmp_path / "x.so"))], 70, *TORCH)
    assert result["problems"] == ([problem] if problem else [])
    assert result["files"]["checked"] == (1 if problem else 0)


@needs_gcc
def test_optional_files_and_summary(stubs, tmp_path):
    site = tmp_path / "site"
    build(stubs, site / "vllm" / "_C.abi3.so", [((70,), ())], ["libcudart.so.12"])
    build(stubs, site / "vllm" / "vllm_flash_attn" / "_vllm_fa2_C.abi3.so", [((80,), ())], ["libcudart.so.12"])
    build(stubs, site / "vllm" / "_moe_C.abi3.so", [((75,), ())], ["libcudart.so.13"])
    (site / "vllm" / "linker.so").write_text("INPUT(libfoo.so)\n")
    result = audit(find_files([str(site)]), 70, *TORCH)
    assert result["problems"] == ["vllm/_moe_C.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, "
                                  "and has no code for sm_70 (lowest sm_75)"]
    assert result["notes"] == ["vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so has no code for sm_70 (lowest sm_80): "
                               "optional (not judged)"]
    assert result["summary"] == "1 problem: 3 shared objects, 3 with CUDA, checked against sm_70 and torch 2.11.0+cu126"
    detail = result["files"]["problem"][0]
    assert detail["cuda_needed"] == {"libcudart.so.13": [13]} and detail["sass"] == ["sm_75"]
    assert detail["cuda_ok"] is False and detail["runnable"] is False and detail["containers_without_code"] == 1


@needs_gcc
def test_without_torch_cuda_majors_are_not_compared(stubs, tmp_path):
    build(stubs, tmp_path / "x.so", [((70,), ())], ["libcudart.so.13"])
    result = audit([("x.so", str(tmp_path / "x.so"))], 70)
    assert result["ok"] is True
    assert result["summary"] == ("ok: 1 shared objects, 1 with CUDA, checked against sm_70 "
                                 "(torch CUDA unknown: majors not compared)")


def test_find_files_globs_and_links(tmp_path):
    for rel in ("a/x.so", "a/lib.so.12", "a/b/y.so", "a/readme.txt", "a/x.sox"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "a" / "link.so").symlink_to(tmp_path / "a" / "x.so")
    assert [pair[0] for pair in find_files([str(tmp_path)])] == ["a/lib.so.12", "a/link.so", "a/b/y.so"]
    assert [pair[0] for pair in find_files([str(tmp_path)], ["a/b/*"])] == ["a/b/y.so"]
    assert find_files([str(tmp_path), str(tmp_path)], ["*.txt"]) == [("a/readme.txt", str(tmp_path / "a/readme.txt"))]


def test_site_probe_names_the_interpreters_site_packages():
    out = subprocess.run([sys.executable, "-I", "-c", SITE_PROBE], capture_output=True, text=True, check=True).stdout
    dirs = json.loads(out)
    assert dirs and all(Path(d).is_dir() for d in dirs)
    assert any(Path(d, "ansible").is_dir() for d in dirs)


REQUIRE_SASS = [
    # containers of vllm/_C.abi3.so, problem when its SASS for the GPU is required
    # vLLM 0.21.0 built with nvcc 12.8 for TORCH_CUDA_ARCH_LIST=7.0: CMake drops 7.0, only sm_52 code is left
    ([((52,), (52,))], "vllm/_C.abi3.so was not built for sm_70: no SASS for it (it has sm_52 compute_52)"),
    ([((), (70,))], "vllm/_C.abi3.so was not built for sm_70: no SASS for it (it has compute_70)"),
    ([((70,), ())], None),
    ([((75,), ()), ((70,), (70,))], None),
]


@needs_gcc
@pytest.mark.parametrize("containers, message", REQUIRE_SASS)
def test_require_sass_refuses_ptx_only_builds(stubs, tmp_path, containers, message):
    site = tmp_path / "site"
    build(stubs, site / "vllm" / "_C.abi3.so", containers, ["libcudart.so.12"])
    required = audit(find_files([str(site)]), 70, *TORCH, require_sass=("vllm/_C*.so",))
    assert required["problems"] == ([message] if message else [])
    # The same file is runnable (PTX at or below sm_70 is JIT-compiled) when SASS is not required.
    assert audit(find_files([str(site)]), 70, *TORCH)["ok"] is True


@needs_gcc
def test_containers_outside_nv_fatbin_count(stubs, tmp_path):
    # Like the real libcufft.so.12 (nvidia-cufft 12.0.0.61): a small .nv_fatbin with sm_75 code only,
    # and the kernels in containers of its own in read-only data.
    target = tmp_path / "libx.so"
    src = tmp_path / "libx.c"
    own = fb.section([((90, 100), ())])
    rows = ", ".join(f"0x{b:02x}" for b in own)
    src.write_text(fb.c_source(fb.section([((75,), ())]))
                   + f"__attribute__((used, aligned(8))) const unsigned char kernels[{len(own)}] = {{{rows}}};\n"
                   + "int volta_test(void) { return 1; }\n")
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(target), str(src)], check=True)
    report = inspect(target)
    assert report["containers"] == [([75], []), ([90, 100], [])] and report["errors"] == []
    assert audit([("libx.so", str(target))], 90)["ok"] is True
    assert audit([("libx.so", str(target))], 70)["problems"] == ["libx.so has no code for sm_70 (lowest sm_75)"]


def test_magic_in_plain_data_is_not_a_container(tmp_path):
    # The magic followed by junk (or at an odd offset) is data, not device code.
    path = tmp_path / "x.bin"
    junk = struct.pack("<IHHQ", fb.MAGIC, 7, 16, 64) + b"\xff" * 64
    path.write_bytes(b"\x7fELF" + b"\0" * 4 + junk + b"\0" * 4 + struct.pack("<I", fb.MAGIC) + b"\0" * 100)
    with open(path, "rb") as fh:
        assert embedded(fh, path.stat().st_size) == []
