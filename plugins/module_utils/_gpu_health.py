# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU health from ``nvidia-smi -q -x`` and the NVIDIA PCI functions in sysfs.

Pure Python (standard library only, no Ansible imports), so unit tests import it directly. Private to
the collection: no compatibility promise outside volta.serving.

The schema was read from a real capture (tests/fixtures/nvidia-smi/h200x2-ubuntu2404-driver580/q.xml,
driver 580.159.04, DTD nvsmi_device_v13) and from NVIDIA's documentation (the nvidia-smi manual,
"Dynamic Page Retirement" at docs.nvidia.com/deploy/dynamic-page-retirement, the A100 memory error
management guide's table of which GPUs have row remapping, the Xid catalogue). What differs by GPU:

=========================  =============================================  ==================================
element                    Volta (V100), what the parser expects          H200 (Hopper), in the capture
=========================  =============================================  ==================================
ecc_errors/volatile        580: sram_/dram_ counters; drivers before      sram_correctable,
                           the sram/dram split: single_bit/double_bit     sram_uncorrectable_parity/_secded,
                           each with a ``total``                          dram_correctable, dram_uncorrectable
retired_pages              the V100's memory protection: Dynamic Page     every field N/A (Hopper remaps
                           Retirement (K20 and newer Tesla, V100          rows instead)
                           included): multiple_single_bit_retirement
                           and double_bit_retirement retired_count,
                           pending_blacklist/pending_retirement Yes/No
remapped_rows              absent or N/A: row remapping is Ampere and     counters and
                           newer (GA100, GH100, ...)                      remapped_row_pending No
clocks_event_reasons       the same names; drivers before 535 call the    clocks_event_reason_* Active /
                           section clocks_throttle_reasons and each       Not Active
                           element clocks_throttle_reason_*
pci_gpu_link_info          V100: Gen3 x16 (SXM2 and PCIe cards)           Gen5 x16
temperature/gpu_temp       "NN C"                                         "29 C"
power readings             power_readings/power_draw on older drivers,    gpu_power_readings/
                           gpu_power_readings/average_power_draw on 580   average_power_draw "92.53 W"
=========================  =============================================  ==================================

A page pending retirement is retired at the next driver load (Xid 63: "New retired page, reload the
driver to activate"); until then the GPU keeps the bad page. Values may be "N/A", "[N/A]",
"Not Supported" or "Unknown Error"; those read as None.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

XML_ARGS = ("-q", "-x")
NVIDIA_VENDOR = "0x10de"
# PCI class codes of a GPU: 0x0300xx VGA-compatible controller, 0x0302xx 3D controller (Tesla boards).
GPU_CLASS_PREFIXES = ("0x0300", "0x0302")

HEALTH_OK = "ok"
HEALTH_UNKNOWN = "unknown"

FAILED = "failed"  # the GPU must not serve until fixed (reboot, reseat, replace)
DEGRADED = "degraded"  # it serves, slower than it should

# The throttle (clocks event) reasons that mean hardware or cooling trouble, not an idle GPU or a cap.
HARDWARE_THROTTLES = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")

_NOT_VALUES = ("n/a", "[n/a]", "not supported", "[not supported]", "unknown error", "[unknown error]", "")
_NUMBER_RE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")
_BUS_ID_RE = re.compile(r"^(?:([0-9A-Fa-f]{4,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$")
_REASON_PREFIXES = ("clocks_event_reason_", "clocks_throttle_reason_")


class GpuHealthError(ValueError):
    """Output that is not the XML report of nvidia-smi."""


def normalise_bus_id(value):
    """A PCI address in sysfs form (``0000:1a:00.0``) from nvidia-smi's ``00000000:1A:00.0`` or sysfs's own.

    nvidia-smi prints a 32-bit domain in upper case, sysfs a 16-bit one in lower case. None when *value*
    is not a PCI address.
    """
    match = _BUS_ID_RE.match(str(value or "").strip())
    if not match:
        return None
    domain, bus, device, function = match.groups()
    domain = int(domain or "0", 16)
    return f"{domain:04x}:{bus.lower()}:{device.lower()}.{function}"


def _text(node, path):
    """The stripped text at *path* below *node*, or None when absent or one of nvidia-smi's N/A words."""
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    text = found.text.strip()
    return None if text.lower() in _NOT_VALUES else text


def _number(node, path):
    """The leading number of the value at *path* ("29 C", "92.53 W", "16x", "5"), int when whole, or None."""
    text = _text(node, path)
    match = _NUMBER_RE.match(text or "")
    if not match:
        return None
    value = float(match.group(1))
    return int(value) if value.is_integer() else value


def _yes(node, path):
    text = _text(node, path)
    return None if text is None else text.lower() == "yes"


def _sum(values):
    """The sum of the known counters; None when none is known (the GPU does not report them)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc_counts(node):
    """{corrected, uncorrected} of one ecc_errors/volatile or /aggregate element, either schema."""
    if node is None:
        return {"corrected": None, "uncorrected": None}
    if node.find("single_bit") is not None or node.find("double_bit") is not None:
        return {"corrected": _number(node, "single_bit/total"), "uncorrected": _number(node, "double_bit/total")}
    corrected, uncorrected = [], []
    for child in node:
        if child.tag.endswith("_correctable"):
            corrected.append(_number(node, child.tag))
        elif "_uncorrectable" in child.tag:
            uncorrected.append(_number(node, child.tag))
    return {"corrected": _sum(corrected), "uncorrected": _sum(uncorrected)}


def _ecc(gpu):
    errors = gpu.find("ecc_errors")
    return {
        "mode": _text(gpu, "ecc_mode/current_ecc"),
        "volatile": _ecc_counts(errors.find("volatile") if errors is not None else None),
        "aggregate": _ecc_counts(errors.find("aggregate") if errors is not None else None),
    }


def _retired_pages(gpu):
    node = gpu.find("retired_pages")
    pending = [_yes(node, "pending_blacklist"), _yes(node, "pending_retirement")]
    known = [p for p in pending if p is not None]
    return {
        "single_bit": _number(node, "multiple_single_bit_retirement/retired_count"),
        "double_bit": _number(node, "double_bit_retirement/retired_count"),
        "pending": any(known) if known else None,
    }


def _remapped_rows(gpu):
    """Row remapping (Ampere and newer); None on GPUs without it (Volta: absent or N/A)."""
    node = gpu.find("remapped_rows")
    if node is None or (_number(node, "remapped_row_unc") is None and _yes(node, "remapped_row_pending") is None):
        return None
    return {
        "correctable": _number(node, "remapped_row_corr"),
        "uncorrectable": _number(node, "remapped_row_unc"),
        "pending": _yes(node, "remapped_row_pending"),
        "failure": _yes(node, "remapped_row_failure"),
    }


def _pcie(gpu):
    link = gpu.find("pci/pci_gpu_link_info")
    return {
        "gen_current": _number(link, "pcie_gen/current_link_gen"),
        "gen_max": _number(link, "pcie_gen/max_link_gen"),
        "width_current": _number(link, "link_widths/current_link_width"),
        "width_max": _number(link, "link_widths/max_link_width"),
    }


def _throttle(gpu):
    """The active clocks event (throttle) reasons, without their prefix, in document order."""
    active = []
    for section in ("clocks_event_reasons", "clocks_throttle_reasons"):
        node = gpu.find(section)
        for child in node if node is not None else ():
            name = child.tag
            for prefix in _REASON_PREFIXES:
                if name.startswith(prefix):
                    name = name[len(prefix):]
            if (child.text or "").strip() == "Active":
                active.append(name)
    return active


def _power(gpu):
    """(draw, limit) in W: 580's gpu_power_readings, else the older power_readings."""
    for section, draw in (("gpu_power_readings", "average_power_draw"), ("gpu_power_readings", "instant_power_draw"),
                          ("power_readings", "power_draw")):
        node = gpu.find(section)
        if node is not None and _number(node, draw) is not None:
            limit = _number(node, "current_power_limit")
            return _number(node, draw), limit if limit is not None else _number(node, "power_limit")
    return None, None


def _gpu(node, position):
    bus_id = _text(node, "pci/pci_bus_id") or node.get("id")
    draw, limit = _power(node)
    return {
        "index": position,
        "bus_id": bus_id,
        "pci_address": normalise_bus_id(bus_id),
        "name": _text(node, "product_name"),
        "ecc": _ecc(node),
        "retired_pages": _retired_pages(node),
        "remapped_rows": _remapped_rows(node),
        "pcie": _pcie(node),
        "throttle": _throttle(node),
        "temperature_c": _number(node, "temperature/gpu_temp"),
        "power_draw_w": draw,
        "power_limit_w": limit,
    }


def parse_health_xml(text):
    """Parse ``nvidia-smi -q -x``: one dict per ``<gpu>``, in document order (nvidia-smi's index order).

    Raises GpuHealthError quoting what it got when the text is not an ``nvidia_smi_log`` document.
    """
    try:
        # The host's own nvidia-smi report, read on the host; defusedxml is not there.
        root = ET.fromstring((text or "").strip())  # noqa: S314
    except ET.ParseError as exc:
        first = next((line for line in (text or "").splitlines() if line.strip()), "")
        raise GpuHealthError(f"nvidia-smi -q -x: not XML ({exc}): first line {first!r}") from exc
    if root.tag != "nvidia_smi_log":
        raise GpuHealthError(f"nvidia-smi -q -x: root element is <{root.tag}>, not <nvidia_smi_log>")
    return [_gpu(node, position) for position, node in enumerate(root.findall("gpu"))]


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip().lower()
    except OSError:
        return None


def sysfs_gpus(sysfs_root="/sys"):
    """The PCI addresses of NVIDIA GPU functions under *sysfs_root*/bus/pci/devices, sorted.

    A function counts when its ``vendor`` is 0x10de and its ``class`` starts 0x0300 or 0x0302 (the
    boards' HDMI audio or USB functions do not), and it is bound to the ``nvidia`` driver or to none (a GPU
    the driver lost or could not take). One bound to another driver (``vfio-pci`` for a virtual machine,
    ``nouveau``) is not this host's CUDA GPU. None when the directory cannot be read.
    """
    devices = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        names = os.listdir(devices)
    except OSError:
        return None
    found = []
    for name in names:
        vendor = _read(os.path.join(devices, name, "vendor"))
        klass = _read(os.path.join(devices, name, "class")) or ""
        driver = os.path.join(devices, name, "driver")
        bound = os.path.basename(os.path.realpath(driver)) if os.path.lexists(driver) else None
        if vendor == NVIDIA_VENDOR and klass.startswith(GPU_CLASS_PREFIXES) and bound in (None, "nvidia"):
            found.append(normalise_bus_id(name) or name)
    return sorted(found)


def _where(gpu):
    return f"GPU {gpu['index']} ({gpu['bus_id']})"


def gpu_problems(gpu):
    """The problems of one parsed GPU: dicts {kind, state, index, bus_id, text}; state failed or degraded."""
    out = []

    def add(kind, state, text):
        out.append({"kind": kind, "state": state, "index": gpu["index"], "bus_id": gpu["bus_id"],
                    "text": f"{_where(gpu)}: {text}"})

    uncorrected = gpu["ecc"]["volatile"]["uncorrected"]
    if uncorrected:
        add("ecc-uncorrectable", FAILED, f"{uncorrected} uncorrectable ECC error(s) since the driver loaded")
    if gpu["retired_pages"]["pending"]:
        add("pending-retirement", FAILED, "memory pages wait for retirement (retired at the next driver load)")
    pcie = gpu["pcie"]
    # An idle GPU lowers its link generation to save power (it trains back up under load), never its
    # width: the generation counts only while the GPU is not idle.
    checks = [("x", pcie["width_current"], pcie["width_max"])]
    if "gpu_idle" not in (gpu["throttle"] or []):
        checks.append(("Gen", pcie["gen_current"], pcie["gen_max"]))
    low = [f"{what}{cur} of {what}{top}" if what == "Gen" else f"x{cur} of x{top}"
           for what, cur, top in checks if cur is not None and top is not None and cur < top]
    if low:
        add("pcie-degraded", DEGRADED, f"PCIe link trained down: {', '.join(low)}")
    hot = [reason for reason in gpu["throttle"] if reason in HARDWARE_THROTTLES]
    if hot:
        add("throttled", DEGRADED, f"clocks held down by {', '.join(hot)}")
    return out


def unknown_health(message, pci_functions=None):
    return {"status": HEALTH_UNKNOWN, "message": message, "gpus": [], "pci_functions": pci_functions,
            "missing": [], "problems": []}


def reusable_health(known, query_gpus):
    """Whether *known*, the health section of an earlier read in this run, still describes the host.

    Only a health read that worked (status ok) counts, and only while nvidia-smi lists the same GPUs (by
    bus id) as then; anything else (a driver installed since, a GPU lost or back) is read again. The
    sysfs functions are those of the earlier read too (preflight's, which may name another sysfs root).
    """
    if not isinstance(known, dict) or known.get("status") != HEALTH_OK:
        return False
    listed = sorted(normalise_bus_id(g.get("pci_bus_id")) for g in query_gpus or [])
    then = sorted(g.get("pci_address") for g in known.get("gpus") or [])
    return listed == then


def build_health(xml_rc, xml_output, query_gpus, pci_functions):
    """The ``health`` section of the volta_gpu fact.

    *xml_rc*/*xml_output* are ``nvidia-smi -q -x``'s (None when not run); *query_gpus* the ``gpus`` of the
    fact (their index and pci_bus_id name the parsed GPUs); *pci_functions* from sysfs_gpus (None when
    unknown). An nvidia-smi that cannot print XML gives status unknown, never an error.
    """
    if xml_output is None:
        return unknown_health("nvidia-smi -q -x was not run", pci_functions)
    if xml_rc != 0:
        first = next((line.strip() for line in xml_output.splitlines() if line.strip()), "")
        return unknown_health(f"nvidia-smi -q -x failed with rc={xml_rc}: {first!r}", pci_functions)
    try:
        gpus = parse_health_xml(xml_output)
    except GpuHealthError as exc:
        return unknown_health(str(exc), pci_functions)
    index_of = {normalise_bus_id(g.get("pci_bus_id")): g.get("index") for g in query_gpus or []}
    for gpu in gpus:
        gpu["index"] = index_of.get(gpu["pci_address"], gpu["index"])
    seen = {gpu["pci_address"] for gpu in gpus}
    missing = [address for address in pci_functions or [] if address not in seen]
    problems = [problem for gpu in gpus for problem in gpu_problems(gpu)]
    problems += [{"kind": "missing", "state": FAILED, "index": None, "bus_id": address,
                  "text": f"PCI function {address} is an NVIDIA GPU in sysfs that nvidia-smi does not list"}
                 for address in missing]
    for gpu in gpus:
        gpu["failed"] = any(p["state"] == FAILED and p["index"] == gpu["index"] for p in problems)
    message = f"{len(gpus)} GPU(s) read, {len(problems)} problem(s)"
    return {"status": HEALTH_OK, "message": message, "gpus": gpus, "pci_functions": pci_functions,
            "missing": missing, "problems": problems}


def _known(value):
    return "?" if value is None else value


def health_line(gpu):
    """One short status line of a parsed GPU: index, bus id, ECC, retired/pending, link, throttle."""
    volatile = ((gpu.get("ecc") or {}).get("volatile") or {}).get("uncorrected")
    pages = gpu.get("retired_pages") or {}
    pcie = gpu.get("pcie") or {}
    hot = [reason for reason in gpu.get("throttle") or [] if reason != "gpu_idle"]
    return (f"GPU {gpu.get('index')} {gpu.get('bus_id')}: ECC uncorrected {_known(volatile)}, "
            f"retired {_known(pages.get('single_bit'))}+{_known(pages.get('double_bit'))}"
            f"{' PENDING' if pages.get('pending') else ''}, "
            f"PCIe Gen{_known(pcie.get('gen_current'))}/{_known(pcie.get('gen_max'))} "
            f"x{_known(pcie.get('width_current'))}/{_known(pcie.get('width_max'))}, "
            f"throttle {','.join(hot) or 'none'}{', FAILED' if gpu.get('failed') else ''}")


def health_lines(facts):
    """The status lines of the volta_gpu fact's health: one per GPU, one per lost GPU, or why it is unknown."""
    health = (facts or {}).get("health") if isinstance(facts, dict) else None
    if not isinstance(health, dict):
        return ["health not read"]
    if health.get("status") != HEALTH_OK:
        return [f"health unknown: {health.get('message')}"]
    return ([health_line(gpu) for gpu in health.get("gpus") or []]
            + [f"PCI {address}: in sysfs, not listed by nvidia-smi (lost)" for address in health.get("missing") or []])
