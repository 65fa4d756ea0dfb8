# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The binary audit of compiled extensions behind volta.serving.cuda_binary_audit.

Pure Python (stdlib), run on the managed host: no ``readelf``, no ``cuobjdump``. For an ELF64
little-endian shared object it reads

- the ``DT_NEEDED`` entries of its dynamic section (through the dynamic string table), and
- the headers of the CUDA fat binary in its ``.nv_fatbin`` section: which SASS (cubin) and PTX
  each container carries, for which SM.

Files are read with seeks and small reads only: ``libtorch_cuda.so`` is about 450 MB and its fat
binary about 300 MB, of which a few kilobytes of headers are read. Fat-binary layout, measured on
the real ``vllm/_C.abi3.so`` of vLLM 0.21.0 and 0.19.1 and ``torch/lib/libtorch_cuda.so`` of torch
2.11.0 (the section is a run of containers, no padding between them)::

    container: u32 magic 0xBA55ED50 | u16 version | u16 header size | u64 size of its entries
    entry:     +0 u16 kind (1 PTX, 2 ELF/SASS) | +4 u32 header size | +8 u64 payload size
               +28 u32 SM (70, 75, ...); the next entry follows at header size + payload size

Payloads are mostly compressed, so only headers are used. Damaged data is reported in the file's
``errors``, never raised.
"""

from __future__ import annotations

import fnmatch
import mmap
import os
import re
import struct

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_SASS = 2
SHT_DYNAMIC = 6
PT_LOAD = 1
PT_DYNAMIC = 2
DT_NEEDED = 1
DT_STRTAB = 5
MAX_DYNAMIC = 1 << 20  # bytes of dynamic section read at most (a real one is a few KB)
MAX_SONAME = 512

# CUDA libraries whose soname major is the CUDA major (libcudart.so.12 is CUDA 12).
_SAME_MAJOR = ("cudart", "nvrtc", "nvrtc-builtins", "cublas", "cublasLt", "nvJitLink", "cupti", "nvjpeg",
               "nppc", "nppial", "nppicc", "nppidei", "nppif", "nppig", "nppim", "nppist", "nppisu",
               "nppitc", "npps", "nvblas", "cudla")
# Libraries whose soname major is not the CUDA major: soname major -> the CUDA majors that ship it.
# From the CUDA 11.8, 12.x and 13.0 library wheels (nvidia-cufft-cu12 11.x ships libcufft.so.11;
# the real torch 2.11.0+cu130 needs libcufft.so.12 and libcusparse.so.12).
_MAPPED_MAJOR = {
    "cufft": {10: (11,), 11: (12,), 12: (13,)},
    "cufftw": {10: (11,), 11: (12,), 12: (13,)},
    "cusolver": {11: (11, 12), 12: (13,)},
    "cusolverMg": {11: (11, 12), 12: (13,)},
    "cusparse": {11: (11,), 12: (12, 13)},
}
# Not mapped: libcuda.so.1 (the driver), libcurand.so.10 (every CUDA from 10 to 13), libnccl,
# libcudnn, libcusparseLt, libcufile, libnvToolsExt (their own version lines).
_SONAME_RE = re.compile(r"^lib([A-Za-z_-]+?)\.so\.(\d+)(?:\.[0-9.]*)?$")


def cuda_majors(soname):
    """The CUDA majors a CUDA library soname belongs to (``libcudart.so.13`` -> (13,)); () otherwise."""
    match = _SONAME_RE.match(soname)
    if not match:
        return ()
    name, major = match.group(1), int(match.group(2))
    if name in _SAME_MAJOR:
        return (major,)
    return _MAPPED_MAJOR.get(name, {}).get(major, ())


def parse_sm(compute_capability):
    """``"7.0"`` -> 70, ``"12.0"`` -> 120; ValueError for anything else."""
    match = re.fullmatch(r"\s*(\d+)\.(\d)\s*", str(compute_capability))
    if not match:
        raise ValueError(f"compute capability {compute_capability!r} is not MAJOR.MINOR (for example 7.0)")
    return int(match.group(1)) * 10 + int(match.group(2))


def cuda_major(torch_cuda):
    """``"12.6"`` -> 12; None for None or "" (a CPU torch)."""
    if not torch_cuda:
        return None
    match = re.match(r"\s*(\d+)", str(torch_cuda))
    if not match:
        raise ValueError(f"torch CUDA version {torch_cuda!r} does not start with a number")
    return int(match.group(1))


class ElfError(Exception):
    """The file starts like an ELF object but cannot be read as one (truncated, damaged, not ELF64 LE)."""


def _read(fh, offset, size, what):
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError(f"truncated: {what} at offset {offset} needs {size} bytes, the file ends before")
    return data


def _cstring(fh, offset, what):
    fh.seek(offset)
    raw = fh.read(MAX_SONAME)
    end = raw.find(b"\0")
    if end < 0:
        raise ElfError(f"{what} at offset {offset} is not a terminated string")
    return raw[:end].decode("utf-8", "replace")


def elf_header(fh):
    """The ELF64 LE header fields this audit uses; None when the file is not ELF at all."""
    ident = fh.read(64)
    if ident[:4] != b"\x7fELF":
        return None
    if len(ident) < 64:
        raise ElfError(f"truncated: the ELF header has {len(ident)} of 64 bytes")
    if ident[4] != 2 or ident[5] != 1:
        raise ElfError(f"not an ELF64 little-endian object (class {ident[4]}, data {ident[5]})")
    phoff, shoff = struct.unpack_from("<QQ", ident, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", ident, 0x36)
    return {"phoff": phoff, "phentsize": phentsize, "phnum": phnum,
            "shoff": shoff, "shentsize": shentsize, "shnum": shnum, "shstrndx": shstrndx}


def sections(fh, hdr):
    """Section headers as dicts (name, type, offset, size, link); [] when the file has none."""
    if not hdr["shoff"] or hdr["shentsize"] < 64:
        return []
    count = hdr["shnum"]
    if count == 0:  # extended numbering: the count is section 0's sh_size
        count = struct.unpack_from("<Q", _read(fh, hdr["shoff"], 64, "section header 0"), 32)[0]
    if count > 65536:
        raise ElfError(f"{count} section headers is not plausible")
    table = _read(fh, hdr["shoff"], count * hdr["shentsize"], f"{count} section headers")
    out = []
    for i in range(count):
        name, typ, _flags, _addr, off, size, link = struct.unpack_from("<IIQQQQI", table, i * hdr["shentsize"])
        out.append({"name_off": name, "type": typ, "offset": off, "size": size, "link": link})
    if 0 < hdr["shstrndx"] < count:
        base = out[hdr["shstrndx"]]["offset"]
        for sec in out:
            sec["name"] = _cstring(fh, base + sec["name_off"], "a section name")
    return out


def _segments(fh, hdr):
    if not hdr["phoff"] or hdr["phentsize"] < 56 or hdr["phnum"] > 4096:
        return []
    table = _read(fh, hdr["phoff"], hdr["phnum"] * hdr["phentsize"], "program headers")
    rows = (struct.unpack_from("<IIQQQQQ", table, i * hdr["phentsize"]) for i in range(hdr["phnum"]))
    return [{"type": t, "offset": off, "vaddr": va, "filesz": fsz} for t, _f, off, va, _pa, fsz, _m in rows]


def _vaddr_to_offset(segments, vaddr):
    for seg in segments:
        if seg["type"] == PT_LOAD and seg["vaddr"] <= vaddr < seg["vaddr"] + seg["filesz"]:
            return seg["offset"] + vaddr - seg["vaddr"]
    raise ElfError(f"the dynamic string table address {vaddr:#x} is in no loaded segment")


def _dynamic_entries(fh, offset, size):
    data = _read(fh, offset, min(size, MAX_DYNAMIC) // 16 * 16, "the dynamic section")
    for pos in range(0, len(data), 16):
        tag, val = struct.unpack_from("<qQ", data, pos)
        if tag == 0:
            return
        yield tag, val


def needed(fh, hdr, secs):
    """The DT_NEEDED sonames, in order; [] for an object without a dynamic section."""
    dyn = next((s for s in secs if s["type"] == SHT_DYNAMIC), None)
    if dyn is not None and dyn["link"] < len(secs):
        strtab = secs[dyn["link"]]["offset"]
        entries = list(_dynamic_entries(fh, dyn["offset"], dyn["size"]))
    else:  # no section headers: the PT_DYNAMIC segment and DT_STRTAB
        segs = _segments(fh, hdr)
        seg = next((s for s in segs if s["type"] == PT_DYNAMIC), None)
        if seg is None:
            return []
        entries = list(_dynamic_entries(fh, seg["offset"], seg["filesz"]))
        strtabs = [v for t, v in entries if t == DT_STRTAB]
        if not strtabs:
            raise ElfError("the dynamic segment has no DT_STRTAB")
        strtab = _vaddr_to_offset(segs, strtabs[0])
    return [_cstring(fh, strtab + v, "a DT_NEEDED name") for t, v in entries if t == DT_NEEDED]


def _skip_zeros(fh, base, pos, size):
    """The first 8-aligned position at or after *pos* that is not zero padding (or *size*)."""
    while pos < size:
        fh.seek(base + pos)
        chunk = fh.read(min(4096, size - pos))
        if not chunk:
            return size
        stripped = len(chunk) - len(chunk.lstrip(b"\0"))
        if stripped < len(chunk):
            return pos + stripped // 8 * 8
        pos += len(chunk)
    return size


def _entries(fh, base, start, end, errors):
    """(kind, sm) of each entry of the container whose entries lie in [start, end) of the section."""
    out, pos = [], start
    while pos < end:
        fh.seek(base + pos)
        head = fh.read(32)
        if len(head) < 32:
            errors.append(f"fat binary: the entry at section offset {pos:#x} is cut off")
            break
        kind, _res, hsize, psize = struct.unpack_from("<HHIQ", head)
        sm = struct.unpack_from("<I", head, 28)[0]
        if hsize < 32 or pos + hsize + psize > end:
            errors.append(f"fat binary: the entry at section offset {pos:#x} (header {hsize}, payload {psize} "
                          f"bytes) does not fit its container")
            break
        out.append((kind, sm))
        pos += hsize + psize
    return out


def fatbin(fh, base, size):
    """Walk a ``.nv_fatbin`` section of *size* bytes at file offset *base*.

    Returns ``{"containers": [(sass, ptx), ...], "errors": [...]}`` where sass and ptx are sorted
    SM lists of one container. Stops at the first thing that is not a container.
    """
    containers, errors, pos = [], [], 0
    while True:
        pos = _skip_zeros(fh, base, pos, size)
        if pos >= size:
            break
        fh.seek(base + pos)
        head = fh.read(16)
        if len(head) < 16 or struct.unpack_from("<I", head)[0] != FATBIN_MAGIC:
            errors.append(f"fat binary: no container at section offset {pos:#x} (bytes {head[:8].hex()})")
            break
        _magic, _version, hsize, esize = struct.unpack("<IHHQ", head)
        end = pos + hsize + esize
        if hsize < 16 or end > size:
            errors.append(f"fat binary: the container at section offset {pos:#x} claims {esize} bytes of entries, "
                          f"the section has {max(size - pos - hsize, 0)} left")
            end = size
        found = _entries(fh, base, pos + max(hsize, 16), end, errors)
        containers.append((sorted({sm for k, sm in found if k == KIND_SASS}),
                           sorted({sm for k, sm in found if k == KIND_PTX})))
        if errors:
            break
        pos = end
    return {"containers": containers, "errors": errors}


def _plausible(fh, pos, fsize):
    """The entries size of a fat-binary container at file offset *pos*, or None if it is not one."""
    fh.seek(pos)
    head = fh.read(16 + 32)
    if len(head) < 48:
        return None
    _magic, version, hsize, esize = struct.unpack_from("<IHHQ", head)
    kind, _res, entry_hsize = struct.unpack_from("<HHI", head, 16)
    sm = struct.unpack_from("<I", head, 16 + 28)[0]
    if version != 1 or hsize != 16 or not 0 < esize <= fsize - pos - 16:
        return None
    if kind not in (KIND_PTX, KIND_SASS) or not 32 <= entry_hsize <= 256 or not 10 <= sm <= 255:
        return None
    return esize


def embedded(fh, fsize, covered=()):
    """Fat-binary containers outside ``.nv_fatbin`` (*covered*: its file ranges), as ``[(sass, ptx), ...]``.

    Some libraries keep most of their kernels in containers of their own, loaded at run time (the
    real libcufft.so.12 of nvidia-cufft 12.0.0.61 has sm_75 code only in its 672-byte ``.nv_fatbin``
    and 23,984 containers, sm_75 ... sm_120, in its read-only data). Found by their magic at
    8-aligned offsets and kept only when their header and every entry are well formed.
    """
    magic = struct.pack("<I", FATBIN_MAGIC)
    out, pos = [], 0
    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        while True:
            pos = data.find(magic, pos)
            if pos < 0:
                return out
            esize = None if pos % 8 or any(a <= pos < b for a, b in covered) else _plausible(fh, pos, fsize)
            if esize is None:
                pos += 4
                continue
            errors = []
            found = _entries(fh, pos, 16, 16 + esize, errors)
            if errors:
                pos += 4
                continue
            out.append((sorted({sm for k, sm in found if k == KIND_SASS}),
                        sorted({sm for k, sm in found if k == KIND_PTX})))
            pos += 16 + esize


def inspect(path):
    """What one file needs and carries: ``{"elf", "needed", "containers", "errors"}``; never raises on bad data."""
    report = {"elf": False, "needed": [], "containers": [], "errors": []}
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"\x7fELF":
                return report
            report["elf"] = True
            fh.seek(0)
            hdr = elf_header(fh)
            secs = sections(fh, hdr)
            report["needed"] = needed(fh, hdr, secs)
            fsize = os.fstat(fh.fileno()).st_size
            covered = []
            for sec in secs:
                if sec.get("name") == ".nv_fatbin" and sec["type"] != 8:  # 8: SHT_NOBITS
                    size = min(sec["size"], max(fsize - sec["offset"], 0))
                    if size < sec["size"]:
                        report["errors"].append(f"fat binary: the section is cut off at {size} of {sec['size']} bytes")
                    walked = fatbin(fh, sec["offset"], size)
                    report["containers"] += walked["containers"]
                    report["errors"] += walked["errors"]
                    covered.append((sec["offset"], sec["offset"] + size))
            if fsize:
                report["containers"] += embedded(fh, fsize, covered)
    except (ElfError, OSError, struct.error) as exc:
        report["errors"].append(f"{'unreadable ELF' if report['elf'] else 'unreadable'}: {exc}")
        report["broken"] = True
    return report


def runnable(sass, ptx, sm):
    """Whether code for GPU *sm* is there: SASS of the same major with minor <= the GPU's, or PTX <= *sm* (JIT)."""
    return any(s // 10 == sm // 10 and s <= sm for s in sass) or any(p <= sm for p in ptx)


def _lowest(sass, ptx):
    low = min([*sass, *ptx])
    return f"sm_{low}" if low in sass else f"compute_{low}"


def _soname_text(soname, majors):
    match = _SONAME_RE.match(soname)
    if match and tuple(majors) == (int(match.group(2)),):
        return soname
    return f"{soname} (CUDA {' or '.join(str(m) for m in majors)})"


def _sass_text(sass, ptx):
    return " ".join([f"sm_{s}" for s in sass] + [f"compute_{p}" for p in ptx]) or "none"


def judge(rel, report, sm, torch_major, torch_label, optional=False, require_sass=False):
    """The verdict on one inspected file: a detail dict, with ``message`` set when it is a problem.

    For an *optional* file (one loaded only on GPUs it has code for) missing device code goes to
    ``note`` instead; a CUDA library of the wrong major is a problem everywhere. A *require_sass*
    file must carry SASS for the GPU: PTX alone (JIT-compiled from an older SM) means it was not
    built for this GPU.
    """
    cuda = {n: list(cuda_majors(n)) for n in report["needed"] if cuda_majors(n)}
    sass = sorted({s for c in report["containers"] for s in c[0]})
    ptx = sorted({p for c in report["containers"] for p in c[1]})
    wrong = [n for n, majors in cuda.items() if torch_major is not None and torch_major not in majors]
    code = bool(sass or ptx)
    ok_code = runnable(sass, ptx, sm) if code else None
    detail = {"path": rel, "cuda_needed": cuda, "sass": [f"sm_{s}" for s in sass],
              "ptx": [f"compute_{p}" for p in ptx], "containers": len(report["containers"]),
              "containers_without_code": sum(1 for s, p in report["containers"] if (s or p) and not runnable(s, p, sm)),
              "cuda_ok": not wrong if torch_major is not None and cuda else None, "runnable": ok_code,
              "errors": report["errors"], "optional": optional, "message": None, "note": None}
    parts = []
    if wrong:
        needs = " and ".join(_soname_text(n, cuda[n]) for n in wrong)
        parts.append(f"needs {needs} but {torch_label} brings CUDA {torch_major}")
    if ok_code is False and optional:
        detail["note"] = f"{rel} has no code for sm_{sm} (lowest {_lowest(sass, ptx)}): optional (not judged)"
    elif ok_code is False:
        parts.append(f"has no code for sm_{sm} (lowest {_lowest(sass, ptx)})")
    elif require_sass and not runnable(sass, (), sm):
        parts.append(f"was not built for sm_{sm}: no SASS for it (it has {_sass_text(sass, ptx)})")
    if report.get("broken"):
        parts.append(f"cannot be read ({report['errors'][-1]})")
    if parts:
        detail["message"] = f"{rel} {', and '.join(parts)}"
    return detail


def torch_label(torch_version, torch_cuda):
    """How messages name torch: ``torch 2.11.0+cu126``, or ``torch (CUDA 12.6)`` without a version."""
    return f"torch {torch_version}" if torch_version else f"torch (CUDA {torch_cuda})"


DEFAULT_INCLUDE = ("*.so", "*.so.*")
# Extensions that are loaded only on GPUs they carry code for, so that missing code for an older GPU
# is no problem. Recorded from the real wheels: vLLM 0.19.1 and 0.21.0 (FlashAttention 2 sm_80,
# FlashAttention 3 and FlashMLA sm_90 and sm_100 only; vLLM picks them by compute capability).
# A file passes when any of its code runs on the GPU: the real libcusparseLt.so.0 of
# nvidia-cusparselt-cu12 0.7.1 has sm_70 code in none of its 795 containers but PTX compute_52 in one.
# NVIDIA's CUDA library wheels (nvidia/*) are matched to the GPU through torch's CUDA build (torch pins
# them; the CUDA major is still compared) and carry stub modules: the real libcufftw.so.12 of
# nvidia-cufft 12.0.0.61 has one 1.9 kB sm_75 cubin and nothing else, and works on an sm_90 GPU.
DEFAULT_OPTIONAL = ("vllm/vllm_flash_attn/*", "vllm/_flashmla*", "nvidia/*")

# Run as ``<venv python> -I -c SITE_PROBE``: the venv's site-packages directories, as JSON.
SITE_PROBE = ("import json, sysconfig; p = sysconfig.get_paths(); "
              "print(json.dumps(sorted({p['purelib'], p['platlib']})))")

_TORCH_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)
_TORCH_CUDA_RE = re.compile(r"""^cuda\s*(?::[^=\n]*)?=\s*(?:['"]([^'"]*)['"]|None)\s*$""", re.M)


def read_torch_version(text):
    """``(version, cuda)`` from the text of ``torch/version.py`` (``cuda`` None for a CPU build); no import."""
    version = _TORCH_VERSION_RE.search(text)
    cuda = _TORCH_CUDA_RE.search(text)
    return (version.group(1) if version else None, (cuda.group(1) or None) if cuda else None)


def find_files(site_dirs, include=None):
    """``(rel, path)`` of every file under *site_dirs* whose relative path matches a glob of *include*.

    Globs are fnmatch patterns on the path relative to its site-packages directory (``*`` also
    matches ``/``). A file reached twice (a link, two equal directories) is listed once.
    """
    patterns = list(include or DEFAULT_INCLUDE)
    seen, out = set(), []
    for site in site_dirs:
        for root, dirs, names in os.walk(site):
            dirs.sort()
            for name in sorted(names):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, site)
                real = os.path.realpath(path)
                if real in seen or not any(fnmatch.fnmatch(rel, p) for p in patterns) or not os.path.isfile(path):
                    continue
                seen.add(real)
                out.append((rel, path))
    return out


def audit(files, sm, torch_cuda=None, torch_version=None, optional=DEFAULT_OPTIONAL, require_sass=()):
    """Audit *files* (``(rel, path)`` pairs) for GPU *sm* and torch's CUDA version; the module's result.

    *optional*: fnmatch globs of files loaded only on GPUs they have code for (see judge()).
    *require_sass*: fnmatch globs of files that must carry SASS for the GPU (an extension built here
    for it, which PTX of an older SM does not replace).
    """
    major = cuda_major(torch_cuda)
    label = torch_label(torch_version, torch_cuda)
    checked, cuda, details, warnings, notes = 0, 0, [], [], []
    for rel, path in files:
        report = inspect(path)
        if not report["elf"]:
            continue
        checked += 1
        detail = judge(rel, report, sm, major, label, any(fnmatch.fnmatch(rel, p) for p in optional),
                       any(fnmatch.fnmatch(rel, p) for p in require_sass))
        cuda += bool(detail["cuda_needed"] or detail["containers"])
        if detail["message"]:
            details.append(detail)
        elif detail["errors"]:
            warnings += [f"{rel} - {e}" for e in detail["errors"]]
        if detail["note"]:
            notes.append(detail["note"])
    problems = [d["message"] for d in details]
    return {"ok": not problems, "sm": f"sm_{sm}", "torch_cuda": torch_cuda, "torch_version": torch_version,
            "files": {"checked": checked, "cuda": cuda, "problem": details},
            "problems": problems, "read_errors": warnings, "notes": notes,
            "summary": summary(checked, cuda, problems, sm, major, label)}


def summary(checked, cuda, problems, sm, major, label):
    """One line for the play and the install record."""
    against = f"sm_{sm} and {label}" if major is not None else f"sm_{sm} (torch CUDA unknown: majors not compared)"
    head = f"{checked} shared objects, {cuda} with CUDA, checked against {against}"
    if not problems:
        return f"ok: {head}"
    return f"{len(problems)} problem{'s' if len(problems) > 1 else ''}: {head}"
