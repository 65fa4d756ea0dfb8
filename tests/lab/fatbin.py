"""Write CUDA fat binaries (the ``.nv_fatbin`` section of a CUDA extension) for lab stand-ins and tests.

Stand-in writer, recorded from the real thing: the layout below was read from the ``.nv_fatbin``
section of the real ``vllm/_C.abi3.so`` in vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl
(2026-11-30). The section is a sequence of containers; each container is

    u32 magic 0xBA55ED50 | u16 version (1) | u16 header size (16) | u64 size of its entries

followed by entries, each a header and a payload:

    +0 u16 kind (1 = PTX, 2 = ELF/SASS) | +2 u16 0x0101 | +4 u32 header size (64 SASS, 80 PTX)
    +8 u64 payload size (padded to 8) | +16 u32 payload bytes used | +20 u32 address size (64, PTX)
    +24 u16 minor, u16 major (PTX: the ISA version; SASS: 8, 1) | +28 u32 SM (70, 75, ...)
    +40 u64 flags (0x11 = 64-bit, Linux; the real ones add 0x8000: zstd-compressed payload)
    +56 u64 uncompressed size | PTX only: +64 u64 72, +72 u64 0

A real NVIDIA driver (580.159.04, H200) loads a fat binary written here with PTX for compute_70
and runs it by JIT (tests/device/fatbin_jit.py); with a 64-byte PTX header it crashes: the 80-byte
PTX header is required.

The real payloads are compressed cubins and PTX; here a payload is a short marker (an ``\\x7fELF``
header for SASS, PTX text for PTX) padded to 8 bytes: readers must use the headers, as the real
payloads cannot be read either. No GPU code is in a stand-in.
"""

from __future__ import annotations

import re
import struct

MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_SASS = 2
CONTAINER_HEADER = 16
ENTRY_HEADER = {KIND_SASS: 64, KIND_PTX: 80}
FLAGS = 0x11


def _payload(kind, sm, text=None):
    if text is not None:
        body = text
    elif kind == KIND_PTX:
        body = f"//\n// volta.serving lab stand-in PTX (no code)\n.version 8.0\n.target sm_{sm}\n".encode()
    else:
        body = b"\x7fELF" + f" volta.serving lab stand-in cubin sm_{sm} (no code)".encode()
    return body + b"\0" * (-len(body) % 8), len(body)


def entry(kind, sm, text=None):
    """One entry (header + payload) of *kind* (KIND_SASS or KIND_PTX) for SM *sm* (e.g. 70).

    *text* (bytes) replaces the marker payload: real PTX source, for a check on a real GPU.
    """
    payload, used = _payload(kind, sm, text)
    if kind == KIND_PTX:
        isa = re.search(rb"^\.version (\d+)\.(\d+)", payload, re.M)
        major, minor = (int(isa.group(1)), int(isa.group(2))) if isa else (8, 0)
        address, tail = 64, struct.pack("<QQ", 72, 0)
    else:
        major, minor, address, tail = 1, 8, 0, b""
    header = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, ENTRY_HEADER[kind], len(payload), used, address,
                         minor, major, sm, 0, 0, FLAGS, 0, used) + tail
    assert len(header) == ENTRY_HEADER[kind]
    return header + payload


def container(sass=(), ptx=(), ptx_text=None):
    """One fat-binary container with SASS for each SM in *sass* and PTX for each SM in *ptx*.

    *ptx_text* maps an SM of *ptx* to real PTX source (bytes) for that entry.
    """
    texts = ptx_text or {}
    body = b"".join(entry(KIND_SASS, sm) for sm in sass) + b"".join(
        entry(KIND_PTX, sm, texts.get(sm)) for sm in ptx
    )
    return struct.pack("<IHHQ", MAGIC, 1, CONTAINER_HEADER, len(body)) + body


def section(containers):
    """The bytes of a ``.nv_fatbin`` section: *containers* is a list of (sass, ptx) pairs."""
    return b"".join(container(sass, ptx) for sass, ptx in containers)


def c_source(blob, symbol="volta_lab_fatbin"):
    """C source that puts *blob* into the ``.nv_fatbin`` section of the object it is compiled into."""
    rows = [", ".join(f"0x{b:02x}" for b in blob[i:i + 16]) for i in range(0, len(blob), 16)]
    body = ",\n  ".join(rows)
    return (
        "/* volta.serving lab stand-in: a fat binary without GPU code (tests/lab/fatbin.py). */\n"
        f'__attribute__((used, section(".nv_fatbin"), aligned(8)))\n'
        f"const unsigned char {symbol}[{len(blob)}] = {{\n  {body}\n}};\n"
    )
