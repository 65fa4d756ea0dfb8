"""Write CUDA fat binaries (the ``.nv_fatbin`` section of a CUDA extension) for lab stand-ins and tests.

Stand-in writer, recorded from the real thing: the layout below was read from the ``.nv_fatbin``
section of the real ``vllm/_C.abi3.so`` in vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl
(2026-11-30). The section is a sequence of containers; each container is

    u32 magic 0xBA55ED50 | u16 version (1) | u16 header size (16) | u64 size of its entries

followed by entries, each a 64-byte header and a payload:

    +0 u16 kind (1 = PTX, 2 = ELF/SASS) | +2 u16 0x0101 | +4 u32 header size (64)
    +8 u64 payload size | +16 u32 payload bytes used | +24 u32 0x00010008 | +28 u32 SM (70, 75, ...)
    +40 u64 flags (0x11) | +56 u64 uncompressed size

The real payloads are compressed cubins and PTX; here a payload is a short marker (an ``\\x7fELF``
header for SASS, PTX text for PTX) padded to 8 bytes: readers must use the headers, as the real
payloads cannot be read either. No GPU code is in a stand-in.
"""

from __future__ import annotations

import struct

MAGIC = 0xBA55ED50
KIND_PTX = 1
KIND_SASS = 2
CONTAINER_HEADER = 16
ENTRY_HEADER = 64


def _payload(kind, sm):
    if kind == KIND_PTX:
        body = f"//\n// volta.serving lab stand-in PTX (no code)\n.version 8.0\n.target sm_{sm}\n".encode()
    else:
        body = b"\x7fELF" + f" volta.serving lab stand-in cubin sm_{sm} (no code)".encode()
    return body + b"\0" * (-len(body) % 8), len(body)


def entry(kind, sm):
    """One entry (header + payload) of *kind* (KIND_SASS or KIND_PTX) for SM *sm* (e.g. 70)."""
    payload, used = _payload(kind, sm)
    header = struct.pack("<HHIQIIIIQQQQ", kind, 0x0101, ENTRY_HEADER, len(payload), used, 0, 0x00010008, sm,
                         0, 0x11, 0, len(payload))
    assert len(header) == ENTRY_HEADER
    return header + payload


def container(sass=(), ptx=()):
    """One fat-binary container with SASS for each SM in *sass* and PTX for each SM in *ptx*."""
    body = b"".join(entry(KIND_SASS, sm) for sm in sass) + b"".join(entry(KIND_PTX, sm) for sm in ptx)
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
