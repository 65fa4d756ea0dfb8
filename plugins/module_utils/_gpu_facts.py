# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse ``nvidia-smi`` and ``/proc/driver/nvidia/version`` output into volta.serving GPU facts.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection
(leading underscore): no compatibility promise outside volta.serving.
"""

from __future__ import annotations

import re

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "name",
    "uuid",
    "compute_cap",
    "memory.total",
    "driver_version",
    "persistence_mode",
)
QUERY_ARGS = ("--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits")
TOPO_ARGS = ("topo", "-m")

STATUS_OK = "ok"
STATUS_NO_DRIVER = "no_driver"
STATUS_DRIVER_MISMATCH = "driver_mismatch"
STATUS_NO_DEVICES = "no_devices"
STATUS_TIMEOUT = "timeout"
# Exit status of coreutils timeout(1) when the command ran out of time (124), or was killed after
# --kill-after (128 + 9).
TIMEOUT_RCS = (124, 137)

# What nvidia-smi prints when it cannot report GPUs (matched as substrings of stdout + stderr).
_NO_DRIVER_MARKERS = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
    "couldn't find libnvidia-ml.so",
)
_MISMATCH_MARKER = "Driver/library version mismatch"
_NVML_VERSION_RE = re.compile(r"NVML library version:\s*(\d+(?:\.\d+)*)")
_NO_DEVICES_MARKER = "No devices were found"

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BUS_ID_RE = re.compile(r"^(?:[0-9A-Fa-f]{4}|[0-9A-Fa-f]{8}):[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_UUID_RE = re.compile(r"^GPU-[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
_CC_RE = re.compile(r"^\d+\.\d+$")
_VERSION_RE = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_MEMORY_RE = re.compile(r"^(\d+)(?: MiB)?$")
_PERSISTENCE = {"Enabled": True, "Disabled": False}
_DEVICE_RE = re.compile(r"^(GPU|NIC)(\d+)$")
_TOPO_CELL_RE = re.compile(r"^(X|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC|PCI|NVB)$")
_PROC_VERSION_RE = re.compile(
    r"^NVRM version: NVIDIA UNIX (?:(?P<open>Open Kernel Module for \S+)|(?P<arch>\S+) Kernel Module)"
    r"\s+(?P<version>\d+\.\d+(?:\.\d+)?)(?:\s|$)"
)


class GpuFactsError(ValueError):
    """Output that is neither a known nvidia-smi format nor a known failure message."""


def _quote(line):
    return repr(line)


def _first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def classify_failure(rc, output):
    """Recognise nvidia-smi's own failure messages.

    Returns ``None`` when *output* is not one of them, else a dict with ``status``, ``message``
    and (for a mismatch) ``nvml_library_version``.
    """
    text = output or ""
    if any(marker in text for marker in _NO_DRIVER_MARKERS):
        return {"status": STATUS_NO_DRIVER, "message": _first_line(text).strip()}
    if _MISMATCH_MARKER in text:
        match = _NVML_VERSION_RE.search(text)
        library = match.group(1) if match else None
        message = "Failed to initialize NVML: Driver/library version mismatch"
        if library:
            message += f" (NVML library version {library})"
        return {"status": STATUS_DRIVER_MISMATCH, "message": message, "nvml_library_version": library}
    if _NO_DEVICES_MARKER in text:
        return {"status": STATUS_NO_DEVICES, "message": _NO_DEVICES_MARKER}
    return None


def parse_query_csv(text):
    """Parse ``nvidia-smi --query-gpu=<QUERY_FIELDS> --format=csv,noheader,nounits``.

    Returns a list of GPU dicts; raises GpuFactsError quoting the first line it cannot read.
    """
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(QUERY_FIELDS):
            raise GpuFactsError(
                f"nvidia-smi --query-gpu: expected {len(QUERY_FIELDS)} comma-separated fields"
                f" ({','.join(QUERY_FIELDS)}), got {len(cells)} in line {_quote(line)}"
            )
        index, bus_id, name, uuid, compute_cap, memory, driver, persistence = cells
        problem = None
        memory_match = _MEMORY_RE.match(memory)
        if not index.isdigit():
            problem = f"index {_quote(index)} is not a number"
        elif not _BUS_ID_RE.match(bus_id):
            problem = f"pci.bus_id {_quote(bus_id)} is not a PCI bus id"
        elif not name:
            problem = "name is empty"
        elif not _UUID_RE.match(uuid):
            problem = f"uuid {_quote(uuid)} is not a GPU UUID"
        elif not _CC_RE.match(compute_cap):
            problem = f"compute_cap {_quote(compute_cap)} is not <major>.<minor>"
        elif not memory_match:
            problem = f"memory.total {_quote(memory)} is not a number of MiB"
        elif not _VERSION_RE.match(driver):
            problem = f"driver_version {_quote(driver)} is not a driver version"
        elif persistence not in _PERSISTENCE:
            problem = f"persistence_mode {_quote(persistence)} is neither Enabled nor Disabled"
        if problem:
            raise GpuFactsError(f"nvidia-smi --query-gpu: {problem} in line {_quote(line)}")
        gpus.append(
            {
                "index": int(index),
                "pci_bus_id": bus_id,
                "name": name,
                "uuid": uuid,
                "compute_capability": compute_cap,
                "memory_total_mib": int(memory_match.group(1)),
                "driver_version": driver,
                "persistence_mode": _PERSISTENCE[persistence],
            }
        )
    return gpus


def _topo_header(lines, text):
    """Return (line number, device column names) of the ``GPU0 GPU1 ... CPU Affinity`` header."""
    for number, line in enumerate(lines):
        tokens = [token.strip() for token in line.split("\t") if token.strip()]
        if not tokens or tokens[0] != "GPU0":
            continue
        if len(tokens) > 1 and _TOPO_CELL_RE.match(tokens[1]):
            raise GpuFactsError(f"nvidia-smi topo -m: GPU row before the header line: {_quote(line)}")
        columns = []
        for token in tokens:
            if not _DEVICE_RE.match(token):
                break
            columns.append(token)
        return number, columns
    raise GpuFactsError(
        f"nvidia-smi topo -m: no header line starting with GPU0 found; first line is {_quote(_first_line(text))}"
    )


def _topo_rows(lines, columns):
    """Read the matrix rows after the header, up to the first blank line: {"GPU<n>": (line, cells)}."""
    rows = {}
    for line in lines:
        if not line.strip():
            break
        cells = [cell.strip() for cell in line.split("\t")]
        device = _DEVICE_RE.match(cells[0])
        if not device:
            raise GpuFactsError(f"nvidia-smi topo -m: unexpected line in the matrix: {_quote(line)}")
        values = cells[1:1 + len(columns)]
        if len(values) != len(columns) or not all(_TOPO_CELL_RE.match(v) for v in values):
            raise GpuFactsError(
                f"nvidia-smi topo -m: expected {len(columns)} link cells (X, NV#, SYS, NODE, PHB, PXB, PIX)"
                f" in line {_quote(line)}"
            )
        if device.group(1) == "GPU":
            if cells[0] in rows:
                raise GpuFactsError(f"nvidia-smi topo -m: duplicate row in line {_quote(line)}")
            rows[cells[0]] = (line, values)
    missing = [c for c in columns if c.startswith("GPU") and c not in rows]
    if missing:
        raise GpuFactsError(f"nvidia-smi topo -m: no matrix row for {', '.join(missing)}")
    return rows


def _islands(gpus, links):
    """Connected components (of at least two GPUs) of the NV# links, sorted."""
    parent = {gpu: gpu for gpu in gpus}

    def find(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for (a, b), cell in links.items():
        if cell.startswith("NV"):
            parent[find(a)] = find(b)
    groups = {}
    for gpu in gpus:
        groups.setdefault(find(gpu), []).append(gpu)
    return sorted(sorted(group) for group in groups.values() if len(group) >= 2)


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m``.

    Returns ``{"gpus": [indexes], "links": {(a, b): cell}, "nvlink_islands": [[...]], "pcie_only": bool}``
    where ``links`` holds each GPU pair (a < b) once.
    """
    lines = [_ANSI_RE.sub("", line) for line in text.splitlines()]
    header_at, columns = _topo_header(lines, text)
    gpus = [int(_DEVICE_RE.match(c).group(2)) for c in columns if c.startswith("GPU")]
    if gpus != list(range(len(gpus))):
        raise GpuFactsError(f"nvidia-smi topo -m: unexpected GPU columns in header line {_quote(lines[header_at])}")
    rows = _topo_rows(lines[header_at + 1:], columns)

    links = {}
    for a in gpus:
        line, values = rows[f"GPU{a}"]
        for b in gpus:
            cell = values[columns.index(f"GPU{b}")]
            if (a == b) != (cell == "X"):
                raise GpuFactsError(f"nvidia-smi topo -m: GPU{a} to GPU{b} is {_quote(cell)} in line {_quote(line)}")
            if a < b:
                links[(a, b)] = cell
    islands = _islands(gpus, links)
    return {"gpus": gpus, "links": links, "nvlink_islands": islands, "pcie_only": not islands}


def parse_proc_version(text):
    """Parse ``/proc/driver/nvidia/version``: ``{"version": "580.95.05", "kernel_module": "open"|"proprietary"}``."""
    first = _first_line(text or "")
    match = _PROC_VERSION_RE.match(first.strip())
    if not match:
        raise GpuFactsError(
            "/proc/driver/nvidia/version: first line is not"
            f" 'NVRM version: NVIDIA UNIX ... Kernel Module  <version>': {_quote(first)}"
        )
    return {
        "version": match.group("version"),
        "kernel_module": "open" if match.group("open") else "proprietary",
    }


def _cc_key(value):
    major, minor = value.split(".")
    return int(major), int(minor)


def empty_facts(status, message):
    return {
        "status": status,
        "message": message,
        "gpu_count": 0,
        "gpus": [],
        "nvlink_islands": [],
        "pcie_only": None,
        "driver_version": None,
        "loaded_driver_version": None,
        "kernel_module": None,
        "min_compute_capability": None,
    }


def needs_topology(query_rc, query_output):
    """Whether the query listed GPUs, so that ``nvidia-smi topo -m`` should be run next."""
    return query_rc == 0 and classify_failure(query_rc, query_output) is None and bool((query_output or "").strip())


def _add_proc_version(facts, proc_version_text):
    if proc_version_text is not None:
        proc = parse_proc_version(proc_version_text)
        facts["loaded_driver_version"] = proc["version"]
        facts["kernel_module"] = proc["kernel_module"]
    return facts


def missing_binary_facts(message, proc_version_text=None):
    """Facts for a host where the nvidia-smi program itself is absent."""
    return _add_proc_version(empty_facts(STATUS_NO_DRIVER, message), proc_version_text)


def timeout_facts(command, seconds, proc_version_text=None):
    """Facts for an nvidia-smi that did not answer within *seconds* (a hung driver): status timeout."""
    facts = empty_facts(
        STATUS_TIMEOUT, f"{' '.join(command)} did not answer within {seconds} s (a hung driver or GPU?)"
    )
    facts["command"] = list(command)
    return _add_proc_version(facts, proc_version_text)


def build_facts(query_rc, query_output, topo_rc=None, topo_output=None, proc_version_text=None):
    """Assemble the ``volta_gpu`` facts.

    ``query_output``/``topo_output`` are nvidia-smi's stdout and stderr joined; ``topo_*`` may be
    ``None`` when the query already failed; ``proc_version_text`` is ``None`` when the file is absent.
    Raises GpuFactsError on output it cannot read.
    """
    if proc_version_text is not None:
        parse_proc_version(proc_version_text)  # fail early on garbage, before running anything else

    failure = classify_failure(query_rc, query_output)
    if failure is None and query_rc != 0:
        raise GpuFactsError(
            f"nvidia-smi --query-gpu failed with rc={query_rc}: {_quote(_first_line(query_output))}"
        )
    if failure is None:
        gpus = parse_query_csv(query_output)
        if not gpus:
            failure = {"status": STATUS_NO_DEVICES, "message": "nvidia-smi listed no GPUs"}

    if failure is not None:
        facts = empty_facts(failure["status"], failure["message"])
        facts["driver_version"] = failure.get("nvml_library_version")
    else:
        if topo_output is None:
            raise GpuFactsError("nvidia-smi topo -m output is required when GPUs are present")
        topo_failure = classify_failure(topo_rc, topo_output)
        if topo_failure is not None or topo_rc not in (0, None):
            raise GpuFactsError(
                f"nvidia-smi topo -m failed with rc={topo_rc}: {_quote(_first_line(topo_output))}"
            )
        topo = parse_topo_matrix(topo_output)
        indexes = sorted(gpu["index"] for gpu in gpus)
        if indexes != topo["gpus"]:
            raise GpuFactsError(
                f"nvidia-smi reports GPUs {indexes} in --query-gpu but {topo['gpus']} in topo -m"
            )
        facts = empty_facts(STATUS_OK, f"{len(gpus)} GPU(s) found")
        facts.update(
            {
                "gpu_count": len(gpus),
                "gpus": sorted(gpus, key=lambda gpu: gpu["index"]),
                "nvlink_islands": topo["nvlink_islands"],
                "pcie_only": topo["pcie_only"],
                "driver_version": gpus[0]["driver_version"],
                "min_compute_capability": min((g["compute_capability"] for g in gpus), key=_cc_key),
            }
        )
    return _add_proc_version(facts, proc_version_text)
