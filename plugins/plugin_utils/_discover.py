# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discovery: a host's ``volta_server`` block, from what volta.serving.gpu_facts read on it.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection.
``playbooks/discover.yml`` reads the host (the volta_gpu fact, ``/proc/meminfo``, the NVIDIA PCI
functions) and prints the block this module writes, ready to paste into ``host_vars/<host>.yml``.
Every field of the block is what the host reports; what the block cannot say (a size in GB that is
not in the model name, GPUs of more than one model, a GPU that is not a Volta) is a comment in it.
"""

from __future__ import annotations

import json
import re
import textwrap

VOLTA = "7.0"
_PLAIN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._()/+-]*$")
_MEMTOTAL_RE = re.compile(r"^MemTotal:\s+(\d+)\s+kB\s*$", re.M)
_NAME_SIZE_RE = re.compile(r"(?<![\d.])(\d+)\s*GB\b", re.I)


def ram_gb(meminfo):
    """The host memory in GB as ``free -g`` prints it (MemTotal in GiB, rounded down), or None."""
    match = _MEMTOTAL_RE.search(meminfo or "")
    return int(match.group(1)) // (1024 * 1024) if match else None


def _scalar(value):
    """A YAML scalar for a string: plain when it reads back the same, else double-quoted."""
    return value if _PLAIN_RE.match(value) and not value.endswith(" ") else json.dumps(value)


def _islands_text(islands):
    return "[" + ", ".join("[" + ", ".join(str(g) for g in island) + "]" for island in islands) + "]"


def _gib(mib):
    gib = mib / 1024
    return f"{gib:.0f}" if gib.is_integer() else f"{gib:.1f}"


def _memory_notes(gpus, model):
    """Comments on the GPUs' memory: the size per GPU, and whether the model name gives it."""
    sizes = sorted({gpu["memory_total_mib"] for gpu in gpus})
    text = " and ".join(f"{_gib(mib)} GiB ({mib} MiB)" for mib in sizes)
    notes = [f"memory per GPU (nvidia-smi memory.total): {text}"]
    if not _NAME_SIZE_RE.search(model):
        notes.append("the model name gives no size in GB: offline checks (weights-fit without a GPU read) "
                     "assume 32 GB per GPU; preflight with detection uses memory.total")
    return notes


def _gpu_notes(facts, names, caps):
    """Comments on what the block cannot hold as one value, or what preflight will refuse."""
    notes = []
    if len(names) > 1:
        notes.append(f"GPUs of {len(names)} models ({', '.join(names)}): volta_server describes one model; "
                     "preflight refuses the host until its GPUs are of one model")
    if len(caps) > 1:
        notes.append(f"compute capabilities {', '.join(caps)}: preflight compares one")
    if caps != [VOLTA]:
        notes.append(f"compute capability {', '.join(caps)}, not {VOLTA} (Volta, V100): the SM70 rules and "
                     "recipes of volta.serving are made for V100s")
    if facts.get("kernel_module") == "open" and VOLTA in caps:
        notes.append("the loaded kernel module is the open one, which does not drive Volta GPUs")
    return notes


def _driver_line(facts):
    loaded = facts.get("loaded_driver_version")
    module = f" ({facts.get('kernel_module')} kernel module)" if facts.get("kernel_module") else ""
    return f"driver {facts.get('driver_version')}, loaded {loaded or 'none'}{module}"


def _read_server(facts, ram):
    """The volta_server fields read from an ``ok`` volta_gpu fact, and the comments on them."""
    gpus = facts["gpus"]
    names = sorted({str(gpu["name"]) for gpu in gpus})
    caps = sorted({str(gpu["compute_capability"]) for gpu in gpus})
    server = {
        "gpu_model": names[0],
        "gpu_count": facts["gpu_count"],
        "compute_capability": facts.get("min_compute_capability") or caps[0],
        "nvlink_islands": [list(island) for island in facts.get("nvlink_islands") or []],
    }
    if ram is not None:
        server["ram_gb"] = ram
    notes = [_driver_line(facts), *_memory_notes(gpus, names[0]), *_gpu_notes(facts, names, caps)]
    return server, notes


def _render(host, server, notes, comments):
    """The block as text: a header naming the host, the notes, then ``volta_server:``."""
    lines = [f"# {host}: read by volta.serving.discover; paste into host_vars/{host}.yml"]
    for note in notes:
        lines += [f"# {line}" for line in textwrap.wrap(note, 96, subsequent_indent="  ")]
    lines.append("volta_server:")
    for key in ("gpu_model", "gpu_count", "compute_capability", "nvlink_islands", "ram_gb"):
        if key not in server:
            continue
        value = server[key]
        if key == "gpu_model":
            text = _scalar(value) if value else ""
        elif key == "compute_capability":
            text = json.dumps(str(value))
        elif key == "nvlink_islands":
            text = _islands_text(value)
        else:
            text = "" if value is None else str(value)
        comment = f"  # {comments[key]}" if comments.get(key) else ""
        lines.append(f"  {key}: {text}".rstrip() + comment)
    return "\n".join(lines) + "\n"


_COMMENTS = {
    "gpu_model": "as nvidia-smi names it; preflight compares",
    "nvlink_islands": "GPUs joined by NVLink (nvidia-smi topo -m); [] = PCIe only",
    "ram_gb": "MemTotal in GiB, as free -g prints it",
}


def _unread_server(facts, ram, pci_functions):
    """A block to fill in by hand for a host whose GPUs nvidia-smi did not list (no driver yet)."""
    server = {"gpu_model": None, "gpu_count": pci_functions or None, "compute_capability": VOLTA,
              "nvlink_islands": []}
    if ram is not None:
        server["ram_gb"] = ram
    notes = [
        f"nvidia-smi listed no GPU ({facts.get('status')}: {facts.get('message')}); "
        f"{pci_functions if pci_functions is not None else 'an unknown number of'} NVIDIA PCI function(s) found",
        "fill in gpu_model (lspci -nn | grep -i nvidia shows the cards; write the name nvidia-smi gives, such as "
        "Tesla V100-PCIE-16GB), check gpu_count, and run discover again once the driver layer "
        "(playbooks/host.yml) has run: it then reads every field, NVLink included",
    ]
    comments = {"gpu_model": "FILL IN", "gpu_count": "NVIDIA PCI functions; check",
                "nvlink_islands": "not read without the driver; [] = PCIe only", "ram_gb": _COMMENTS["ram_gb"]}
    return server, notes, comments


def compare(current, server):
    """A note on the inventory's volta_server (*current*) against the one read, or None without one."""
    if not isinstance(current, dict):
        return None
    differ = []
    for key, value in server.items():
        said = current.get(key)
        if key == "nvlink_islands":
            same = sorted(sorted(i) for i in said or []) == sorted(sorted(i) for i in value)
        else:
            same = str(said) == str(value)
        if value is not None and not same:
            differ.append(f"{key} {said!r} (inventory) against {value!r} (read)")
    if not differ:
        return "the inventory's volta_server says the same"
    return "the inventory's volta_server differs: " + "; ".join(differ)


def discover(host, gpu_facts, meminfo=None, pci_functions=None, current=None):
    """The ``volta_server`` of *host* from its volta_gpu fact (and ``/proc/meminfo``'s text).

    *current* is the inventory's volta_server of the host, if it has one: a note says what differs.
    Returns ``{"host", "read": bool, "volta_server": {...}, "notes": [...], "block": str}``; ``read``
    is False when nvidia-smi listed no GPU: the block then has the fields to fill in by hand.
    """
    facts = gpu_facts if isinstance(gpu_facts, dict) else {"status": "unknown", "message": "no volta_gpu fact"}
    ram = ram_gb(meminfo)
    read = facts.get("status") == "ok" and bool(facts.get("gpus"))
    if read:
        server, notes = _read_server(facts, ram)
        comments = dict(_COMMENTS)
    else:
        server, notes, comments = _unread_server(facts, ram, pci_functions)
    if ram is None:
        notes.append("ram_gb left out: /proc/meminfo gave no MemTotal (preflight then skips the RAM check)")
    note = compare(current, server) if read else None
    if note:
        notes.append(note)
    return {"host": host, "read": read, "volta_server": server, "notes": notes,
            "block": _render(host, server, notes, comments)}
