"""volta-exporter: per-host GPU, Xid and gateway metrics for Prometheus (docs/operations.md).

Reads the GPUs through NVML (the ``nvidia-ml-py`` bindings, module ``pynvml``), never by parsing
``nvidia-smi``; counts Xid events from the kernel log (``/dev/kmsg``, or a file given with
``--kernel-log`` that is followed like ``tail -F``) and the gateway's responses from its nginx access
logs. Serves ``/metrics`` with ``prometheus-client``. The metric names and labels are the contract in
docs/operations.md ("What is exported").

The logic below takes the NVML module as an argument and returns plain samples, so the unit tests
run it with a fake module; ``pynvml`` and ``prometheus_client`` are imported only by ``main()``.
"""

from __future__ import annotations

import argparse
import errno
import glob
import logging
import os
import re
import sys
import threading
from collections import namedtuple

LOG = logging.getLogger("volta-exporter")

Sample = namedtuple("Sample", "name labels value")

# name -> (type, help); every name the exporter can emit.
METRICS = {
    "volta_gpu_exporter_nvml_up": ("gauge", "1 when NVML initialised and the device count was read"),
    "volta_gpu_exporter_nvml_errors": ("gauge", "1 for each NVML call that failed on this scrape (not NOT_SUPPORTED)"),
    "volta_gpu_count": ("gauge", "GPUs NVML reports"),
    "volta_gpu_expected_count": ("gauge", "GPUs the inventory declares"),
    "volta_gpu_pci_devices": ("gauge", "NVIDIA display/3D PCI functions in sysfs"),
    "volta_gpu_info": ("gauge", "GPU identity"),
    "volta_gpu_utilization_ratio": ("gauge", "GPU utilisation 0..1"),
    "volta_gpu_memory_used_bytes": ("gauge", "framebuffer memory used"),
    "volta_gpu_memory_total_bytes": ("gauge", "framebuffer memory total"),
    "volta_gpu_temperature_celsius": ("gauge", "GPU core temperature"),
    "volta_gpu_power_watts": ("gauge", "power draw"),
    "volta_gpu_power_limit_watts": ("gauge", "enforced power limit"),
    "volta_gpu_clock_hertz": ("gauge", "current clocks"),
    "volta_gpu_throttle_active": ("gauge", "1 while the clocks-event (throttle) reason is active"),
    "volta_gpu_ecc_errors": ("gauge", "NVML total ECC error counts"),
    "volta_gpu_retired_pages": ("gauge", "retired framebuffer pages"),
    "volta_gpu_retired_pages_pending": ("gauge", "1 when a page retirement waits for a driver reload"),
    "volta_gpu_nvlink_errors": ("gauge", "NVLink error counters per active link"),
    "volta_gpu_pcie_link_generation": ("gauge", "PCIe link generation"),
    "volta_gpu_pcie_link_width": ("gauge", "PCIe link width"),
    "volta_gpu_xid_errors_total": ("counter", "Xid events in the kernel log since the exporter started"),
    "volta_gateway_responses_total": ("counter", "gateway responses by status since the exporter started"),
}

# NVML clocks-event reason bits (nvml.h nvmlClocksEventReason*), label -> bit.
THROTTLE_REASONS = (
    ("gpu_idle", 0x1),
    ("applications_clocks", 0x2),
    ("sw_power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal", 0x20),
    ("hw_thermal", 0x40),
    ("hw_power_brake", 0x80),
    ("display_clocks", 0x100),
)


class Unsupported(Exception):
    """NVML answered NOT_SUPPORTED: the series is left out for this GPU."""


class GpuReader:
    """Per-GPU NVML reads on one handle; records each failed call in ``errors``."""

    def __init__(self, nvml, index, handle, labels):
        self.nvml = nvml
        self.index = index
        self.handle = handle
        self.labels = labels
        self.samples = []
        self.errors = []

    def call(self, fname, *args):
        """``nvml.<fname>(handle, *args)``; raises :class:`Unsupported` or returns None on another error."""
        try:
            return getattr(self.nvml, fname)(self.handle, *args)
        except self.nvml.NVMLError as exc:
            if exc.value == self.nvml.NVML_ERROR_NOT_SUPPORTED:
                raise Unsupported(fname) from None
            LOG.error("NVML %s on GPU %s (%s): %s", fname, self.index, self.labels["bus_id"], exc)
            self.errors.append((fname, str(exc)))
            return None

    def add(self, name, fname, *args, scale=1.0, extra=None, convert=None):
        """One sample from one NVML call; absent when unsupported or failed."""
        try:
            value = self.call(fname, *args)
        except Unsupported:
            return None
        if value is None:
            return None
        value = convert(value) if convert else value * scale
        self.samples.append(Sample(name, {**self.labels, **(extra or {})}, float(value)))
        return value


def nvml_bus_id(pci):
    """The PCI bus id as NVML prints it ("00000000:1A:00.0"), from an nvmlPciInfo_t."""
    bus_id = pci.busId
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    return bus_id.upper()


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def read_gpu(nvml, index, handle, driver_version):
    """All per-GPU samples of one GPU (see the contract), and the failed calls."""
    probe = GpuReader(nvml, index, handle, {"gpu": str(index), "bus_id": ""})
    try:
        pci = probe.call("nvmlDeviceGetPciInfo")
    except Unsupported:
        pci = None
    bus_id = nvml_bus_id(pci) if pci is not None else ""
    gpu = GpuReader(nvml, index, handle, {"gpu": str(index), "bus_id": bus_id})
    gpu.errors.extend(probe.errors)
    _read_identity(gpu, driver_version)
    _read_gauges(gpu)
    _read_throttle(gpu)
    _read_ecc(gpu)
    _read_nvlink(gpu)
    return gpu


def _read_identity(gpu, driver_version):
    names = {}
    for key, fname in (("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID")):
        try:
            value = gpu.call(fname)
        except Unsupported:
            value = None
        names[key] = _text(value) if value is not None else ""
    gpu.samples.append(Sample("volta_gpu_info", {**gpu.labels, **names, "driver_version": driver_version}, 1.0))


def _read_gauges(gpu):
    nvml = gpu.nvml
    gpu.add("volta_gpu_utilization_ratio", "nvmlDeviceGetUtilizationRates", convert=lambda u: u.gpu / 100.0)
    try:
        mem = gpu.call("nvmlDeviceGetMemoryInfo")
    except Unsupported:
        mem = None
    if mem is not None:
        gpu.samples.append(Sample("volta_gpu_memory_used_bytes", dict(gpu.labels), float(mem.used)))
        gpu.samples.append(Sample("volta_gpu_memory_total_bytes", dict(gpu.labels), float(mem.total)))
    gpu.add("volta_gpu_temperature_celsius", "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU)
    gpu.add("volta_gpu_power_watts", "nvmlDeviceGetPowerUsage", scale=0.001)
    gpu.add("volta_gpu_power_limit_watts", "nvmlDeviceGetEnforcedPowerLimit", scale=0.001)
    for clock, ctype in (("sm", nvml.NVML_CLOCK_SM), ("memory", nvml.NVML_CLOCK_MEM)):
        gpu.add("volta_gpu_clock_hertz", "nvmlDeviceGetClockInfo", ctype, scale=1e6, extra={"clock": clock})
    gpu.add("volta_gpu_retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus",
            convert=lambda v: 1 if v else 0)
    for cause, code in (("single_bit", nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS),
                        ("double_bit", nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)):
        gpu.add("volta_gpu_retired_pages", "nvmlDeviceGetRetiredPages", code, convert=len, extra={"cause": cause})
    for which, prefix in (("current", "Curr"), ("max", "Max")):
        gpu.add("volta_gpu_pcie_link_generation", f"nvmlDeviceGet{prefix}PcieLinkGeneration", extra={"which": which})
        gpu.add("volta_gpu_pcie_link_width", f"nvmlDeviceGet{prefix}PcieLinkWidth", extra={"which": which})


def _read_throttle(gpu):
    try:
        mask = gpu.call("nvmlDeviceGetCurrentClocksEventReasons")
    except Unsupported:
        return
    if mask is None:
        return
    for reason, bit in THROTTLE_REASONS:
        gpu.samples.append(Sample("volta_gpu_throttle_active", {**gpu.labels, "reason": reason},
                                  1.0 if mask & bit else 0.0))


def _read_ecc(gpu):
    nvml = gpu.nvml
    for error, etype in (("corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
                         ("uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED)):
        for counter, ctype in (("volatile", nvml.NVML_VOLATILE_ECC), ("aggregate", nvml.NVML_AGGREGATE_ECC)):
            gpu.add("volta_gpu_ecc_errors", "nvmlDeviceGetTotalEccErrors", etype, ctype,
                    extra={"error": error, "counter": counter})


NVLINK_COUNTERS = (
    ("replay", "NVML_NVLINK_ERROR_DL_REPLAY"),
    ("recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"),
    ("crc_flit", "NVML_NVLINK_ERROR_DL_CRC_FLIT"),
    ("crc_data", "NVML_NVLINK_ERROR_DL_CRC_DATA"),
)


def _nvlink_active(gpu, link):
    """True/False for a link's state; None past the device's last link or without NVLink."""
    nvml = gpu.nvml
    try:
        return bool(nvml.nvmlDeviceGetNvLinkState(gpu.handle, link))
    except nvml.NVMLError as exc:
        if exc.value in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT):
            return None
        LOG.error("NVML nvmlDeviceGetNvLinkState link %s on GPU %s (%s): %s", link, gpu.index,
                  gpu.labels["bus_id"], exc)
        gpu.errors.append(("nvmlDeviceGetNvLinkState", str(exc)))
        return None


def _read_nvlink(gpu):
    """Error counters of each active link; links stop at the first NOT_SUPPORTED/INVALID_ARGUMENT."""
    nvml = gpu.nvml
    for link in range(nvml.NVML_NVLINK_MAX_LINKS):
        active = _nvlink_active(gpu, link)
        if active is None:
            return
        if not active:
            continue
        for counter, const in NVLINK_COUNTERS:
            gpu.add("volta_gpu_nvlink_errors", "nvmlDeviceGetNvLinkErrorCounter", link, getattr(nvml, const),
                    extra={"link": str(link), "counter": counter})


def read_nvml(nvml, state):
    """Samples of every GPU NVML lists. ``state`` keeps ``initialised`` and the bus id of each index."""
    try:
        if not state.get("initialised"):
            nvml.nvmlInit()
            state["initialised"] = True
        count = nvml.nvmlDeviceGetCount()
        driver = _text(nvml.nvmlSystemGetDriverVersion())
    except nvml.NVMLError as exc:
        LOG.error("NVML unavailable: %s", exc)
        if state.pop("initialised", False):
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError:
                pass
        return [Sample("volta_gpu_exporter_nvml_up", {}, 0.0)]
    samples = [Sample("volta_gpu_exporter_nvml_up", {}, 1.0), Sample("volta_gpu_count", {}, float(count))]
    for index in range(count):
        samples.extend(_one_gpu(nvml, index, driver, state))
    return samples


def _one_gpu(nvml, index, driver, state):
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as exc:
        LOG.error("NVML nvmlDeviceGetHandleByIndex(%s): %s", index, exc)
        return [Sample("volta_gpu_exporter_nvml_errors",
                       {"gpu": str(index), "bus_id": "", "call": "nvmlDeviceGetHandleByIndex", "error": str(exc)}, 1.0)]
    gpu = read_gpu(nvml, index, handle, driver)
    if gpu.labels["bus_id"]:
        state.setdefault("bus_ids", {})[gpu.labels["bus_id"]] = str(index)
    errors = [Sample("volta_gpu_exporter_nvml_errors", {**gpu.labels, "call": call, "error": error}, 1.0)
              for call, error in gpu.errors]
    return gpu.samples + errors


def count_pci_gpus(root="/sys/bus/pci/devices"):
    """NVIDIA PCI functions of class display VGA (0x0300xx) or 3D (0x0302xx) under *root*; None without sysfs."""
    if not os.path.isdir(root):
        return None
    count = 0
    for dev in sorted(os.listdir(root)):
        try:
            with open(os.path.join(root, dev, "vendor"), encoding="ascii") as fh:
                vendor = fh.read().strip().lower()
            with open(os.path.join(root, dev, "class"), encoding="ascii") as fh:
                klass = fh.read().strip().lower()
        except OSError:
            continue
        if vendor == "0x10de" and klass[:6] in ("0x0300", "0x0302"):
            count += 1
    return count


# The driver's Xid line (nv_report_error in the open kernel modules' os-interface):
#   NVRM: Xid (PCI:0000:1a:00): 79, pid=..., GPU has fallen off the bus.
# Older drivers print the address without "PCI:".
XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.\d)?\): (\d+)")


def parse_xid(line):
    """(bus_id as NVML prints it, xid) of a kernel log line, or None."""
    match = XID_RE.search(line)
    if not match:
        return None
    domain, bus, dev, xid = match.groups()
    return f"{int(domain, 16):08X}:{int(bus, 16):02X}:{int(dev, 16):02X}.0", xid


# nginx "combined": $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent ...
# nginx escapes '"' inside $request as \x22, so the request has no bare quote.
ACCESS_RE = re.compile(r'^\S+ - \S+ \[[^\]]*\] "[^"]*" (\d{3}) ')
ACCESS_NAME_RE = re.compile(r"^volta-(.+)\.access\.log$")


def parse_access(line):
    """The HTTP status of one combined-format access log line, or None."""
    match = ACCESS_RE.match(line)
    return match.group(1) if match else None


class FileFollower:
    """Follows a growing log file across rotation (a new inode, or a truncation), like ``tail -F``.

    Opened at start-up, it starts at the end (counts only what comes after); a file that appears
    later is read from its start. A partial last line waits for its newline.
    """

    def __init__(self, path, from_end=True):
        self.path = path
        self.fh = None
        self.ino = None
        self.buf = b""
        self._open(from_end)

    def _open(self, from_end):
        try:
            fh = open(self.path, "rb")
        except OSError:
            self.fh = None
            return
        st = os.fstat(fh.fileno())
        if from_end:
            fh.seek(st.st_size)
        self.fh, self.ino = fh, st.st_ino

    def _drain(self):
        data = self.fh.read()
        if not data:
            return []
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines]

    def poll(self):
        """The complete new lines since the last poll (the old file's rest first after a rotation)."""
        if self.fh is None:
            self._open(from_end=False)
            if self.fh is None:
                return []
        lines = self._drain()
        try:
            st = os.stat(self.path)
        except OSError:
            return lines
        if st.st_ino != self.ino or st.st_size < self.fh.tell():
            self.fh.close()
            self.buf = b""
            self._open(from_end=False)
            if self.fh is not None:
                lines += self._drain()
        return lines


class KmsgFollower:
    """Reads new records of ``/dev/kmsg`` without blocking (one record per read), from its end at start."""

    def __init__(self, path="/dev/kmsg"):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        os.lseek(self.fd, 0, os.SEEK_END)

    def poll(self):
        lines = []
        while True:
            try:
                record = os.read(self.fd, 8192)
            except BlockingIOError:
                return lines
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # records overwritten before we read them
                    continue
                raise
            if not record:
                return lines
            lines.append(kmsg_message(record))


def kmsg_message(record):
    """The message of one /dev/kmsg record: "prio,seq,usec,flags[,...];message\\n" then " KEY=value" lines."""
    _head, _sep, message = record.decode("utf-8", "replace").partition(";")
    return message.split("\n", 1)[0]


def kernel_follower(path):
    """/dev/kmsg (a character device) or a plain file (the lab injects lines into one)."""
    if path == "/dev/kmsg" or (os.path.exists(path) and not os.path.isfile(path)):
        return KmsgFollower(path)
    return FileFollower(path)


class LogCounters:
    """Xid and gateway response counters, fed by polling the followers at each scrape."""

    def __init__(self, kernel, access_glob):
        self.kernel = kernel
        self.access_glob = access_glob
        self.access = {}
        self.xids = {}
        self.responses = {}
        self.lock = threading.Lock()
        self._discover(from_end=True)

    def _discover(self, from_end):
        for path in sorted(glob.glob(self.access_glob)) if self.access_glob else []:
            match = ACCESS_NAME_RE.match(os.path.basename(path))
            if match and path not in self.access:
                self.access[path] = (match.group(1), FileFollower(path, from_end=from_end))

    def poll(self):
        with self.lock:
            self._discover(from_end=False)
            for instance, follower in self.access.values():
                for line in follower.poll():
                    code = parse_access(line)
                    if code:
                        key = (instance, code)
                        self.responses[key] = self.responses.get(key, 0) + 1
            for line in self.kernel.poll() if self.kernel else []:
                got = parse_xid(line)
                if got:
                    self.xids[got] = self.xids.get(got, 0) + 1

    def samples(self, bus_ids):
        """Counter samples; an Xid's ``gpu`` is NVML's index for its bus id ("" when NVML never saw it)."""
        out = [Sample("volta_gpu_xid_errors_total", {"gpu": bus_ids.get(bus, ""), "bus_id": bus, "xid": xid},
                      float(n)) for (bus, xid), n in sorted(self.xids.items())]
        out += [Sample("volta_gateway_responses_total", {"instance_name": inst, "code": code}, float(n))
                for (inst, code), n in sorted(self.responses.items())]
        return out


def scrape(nvml, state, args, logs):
    """Every sample of one scrape."""
    samples = read_nvml(nvml, state) if nvml is not None else [Sample("volta_gpu_exporter_nvml_up", {}, 0.0)]
    if args.expected_gpus is not None:
        samples.append(Sample("volta_gpu_expected_count", {}, float(args.expected_gpus)))
    pci = count_pci_gpus(args.sysfs_pci)
    if pci is not None:
        samples.append(Sample("volta_gpu_pci_devices", {}, float(pci)))
    if logs is not None:
        logs.poll()
        samples += logs.samples(state.get("bus_ids", {}))
    return samples


def families(samples):
    """prometheus_client metric families of *samples*, one per name, in METRICS order."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    by_name = {}
    for sample in samples:
        by_name.setdefault(sample.name, []).append(sample)
    for name, (kind, text) in METRICS.items():
        group = by_name.get(name)
        if not group:
            continue
        keys = list(group[0].labels)
        cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        fam = cls(name, text, labels=keys)
        for sample in group:
            fam.add_metric([sample.labels[k] for k in keys], sample.value)
        yield fam


class Collector:
    """A prometheus_client collector that scrapes on every ``collect()``."""

    def __init__(self, nvml, args, logs):
        self.nvml, self.args, self.logs = nvml, args, logs
        self.state = {}
        self.lock = threading.Lock()

    def collect(self):
        with self.lock:
            samples = scrape(self.nvml, self.state, self.args, self.logs)
        yield from families(samples)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="volta-exporter", description=__doc__.splitlines()[0])
    parser.add_argument("--listen-address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9402)
    parser.add_argument("--expected-gpus", type=int, default=None,
                        help="GPUs the inventory declares (volta_gpu_expected_count)")
    parser.add_argument("--kernel-log", default="/dev/kmsg",
                        help="/dev/kmsg, or a file followed like tail -F (the lab writes Xid lines there); empty: none")
    parser.add_argument("--gateway-logs", default="/var/log/nginx/volta-*.access.log",
                        help="glob of the gateway's access logs, volta-<instance>.access.log; '' for none")
    parser.add_argument("--sysfs-pci", default="/sys/bus/pci/devices")
    parser.add_argument("--once", action="store_true", help="print one exposition and exit")
    return parser.parse_args(argv)


def _logs(args):
    kernel = None
    if args.kernel_log:
        try:
            kernel = kernel_follower(args.kernel_log)
        except OSError as exc:
            LOG.error("kernel log %s: %s (no Xid counts)", args.kernel_log, exc)
    return LogCounters(kernel, args.gateway_logs)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="volta-exporter: %(levelname)s %(message)s", stream=sys.stderr)
    import pynvml
    from prometheus_client import CollectorRegistry, generate_latest, start_http_server

    registry = CollectorRegistry(auto_describe=False)
    collector = Collector(pynvml, args, _logs(args))
    registry.register(collector)
    if args.once:
        sys.stdout.write(generate_latest(registry).decode("utf-8"))
        return 0
    server, thread = start_http_server(args.port, addr=args.listen_address, registry=registry)
    LOG.info("serving /metrics on %s:%s", args.listen_address, args.port)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
