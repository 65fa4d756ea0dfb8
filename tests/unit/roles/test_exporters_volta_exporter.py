"""volta-exporter's logic (roles/exporters/files/volta_exporter.py) with a fake NVML module.

``FakeNvml`` is a stand-in for ``pynvml`` of nvidia-ml-py 13.615.71: the same function names,
constants (nvml.h values) and ``NVMLError.value``; the readings are a Tesla V100-SXM2-32GB's
published values (tests/lab/gpu-sim/profiles.json). No NVML library is loaded.
"""

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("volta_exporter", ROOT / "roles/exporters/files/volta_exporter.py")
vx = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(vx)

NOT_SUPPORTED, INVALID_ARGUMENT, GPU_IS_LOST, DRIVER_NOT_LOADED = 3, 2, 15, 9


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(value)
        self.value = value

    def __str__(self):
        return {3: "Not Supported", 15: "GPU is lost", 9: "Driver Not Loaded", 2: "Invalid Argument"}[self.value]


def v100(index, **over):
    gpu = {
        "name": "Tesla V100-SXM2-32GB", "uuid": f"GPU-00000000-0000-0000-0000-{index:012d}",
        "bus_id": f"00000000:{0x18 + index:02X}:00.0", "util": 37, "mem_total": 34359738368,
        "mem_used": 1073741824, "temp": 35, "power_mw": 44000, "limit_mw": 300000, "sm_mhz": 1530, "mem_mhz": 877,
        "reasons": 0x1 | 0x4, "ecc": {(0, 0): 3, (0, 1): 10, (1, 0): 0, (1, 1): 0}, "retired": {0: [], 1: []},
        "pending": 0, "nvlink": [1, 1, 0, 1, 1, 1], "nvlink_err": 0, "pcie": (3, 3, 16, 16), "fail": {},
    }
    gpu.update(over)
    return gpu


class FakeNvml:
    NVMLError = NVMLError
    NVML_ERROR_NOT_SUPPORTED = NOT_SUPPORTED
    NVML_ERROR_INVALID_ARGUMENT = INVALID_ARGUMENT
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2
    NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 0, 1
    NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 0, 1
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 0, 1
    NVML_NVLINK_MAX_LINKS = 36
    NVML_NVLINK_ERROR_DL_REPLAY, NVML_NVLINK_ERROR_DL_RECOVERY = 0, 1
    NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_CRC_DATA = 2, 3

    def __init__(self, gpus, init_error=None):
        self.gpus = gpus
        self.init_error = init_error
        self.calls = []

    def _gpu(self, handle, fname):
        self.calls.append(fname)
        gpu = self.gpus[handle]
        if fname in gpu["fail"]:
            raise NVMLError(gpu["fail"][fname])
        return gpu

    def nvmlInit(self):
        if self.init_error:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlDeviceGetHandleByIndex(self, index):
        if "handle" in self.gpus[index]["fail"]:
            raise NVMLError(self.gpus[index]["fail"]["handle"])
        return index

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=self._gpu(h, "nvmlDeviceGetPciInfo")["bus_id"].encode())

    def nvmlDeviceGetName(self, h):
        return self._gpu(h, "nvmlDeviceGetName")["name"]

    def nvmlDeviceGetUUID(self, h):
        return self._gpu(h, "nvmlDeviceGetUUID")["uuid"]

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=self._gpu(h, "nvmlDeviceGetUtilizationRates")["util"], memory=0)

    def nvmlDeviceGetMemoryInfo(self, h):
        g = self._gpu(h, "nvmlDeviceGetMemoryInfo")
        return SimpleNamespace(total=g["mem_total"], used=g["mem_used"], free=g["mem_total"] - g["mem_used"])

    def nvmlDeviceGetTemperature(self, h, sensor):
        assert sensor == 0
        return self._gpu(h, "nvmlDeviceGetTemperature")["temp"]

    def nvmlDeviceGetPowerUsage(self, h):
        return self._gpu(h, "nvmlDeviceGetPowerUsage")["power_mw"]

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._gpu(h, "nvmlDeviceGetEnforcedPowerLimit")["limit_mw"]

    def nvmlDeviceGetClockInfo(self, h, ctype):
        g = self._gpu(h, "nvmlDeviceGetClockInfo")
        return {1: g["sm_mhz"], 2: g["mem_mhz"]}[ctype]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._gpu(h, "nvmlDeviceGetCurrentClocksEventReasons")["reasons"]

    def nvmlDeviceGetTotalEccErrors(self, h, etype, ctype):
        return self._gpu(h, "nvmlDeviceGetTotalEccErrors")["ecc"][(etype, ctype)]

    def nvmlDeviceGetRetiredPages(self, h, cause):
        return list(self._gpu(h, "nvmlDeviceGetRetiredPages")["retired"][cause])

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h):
        return self._gpu(h, "nvmlDeviceGetRetiredPagesPendingStatus")["pending"]

    def nvmlDeviceGetNvLinkState(self, h, link):
        links = self._gpu(h, "nvmlDeviceGetNvLinkState")["nvlink"]
        if links is None:
            raise NVMLError(NOT_SUPPORTED)
        if link >= len(links):
            raise NVMLError(INVALID_ARGUMENT)
        return links[link]

    def nvmlDeviceGetNvLinkErrorCounter(self, h, link, counter):
        return self._gpu(h, "nvmlDeviceGetNvLinkErrorCounter")["nvlink_err"] + 100 * link + counter

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkGeneration")["pcie"][0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkGeneration")["pcie"][1]

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self._gpu(h, "nvmlDeviceGetCurrPcieLinkWidth")["pcie"][2]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkWidth")["pcie"][3]


def find(samples, name, **labels):
    return [s for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def value(samples, name, **labels):
    got = find(samples, name, **labels)
    assert len(got) == 1, (name, labels, got)
    return got[0].value


def test_healthy_v100_reads_every_series():
    samples = vx.read_nvml(FakeNvml([v100(0), v100(1)]), {})
    assert value(samples, "volta_gpu_exporter_nvml_up") == 1
    assert value(samples, "volta_gpu_count") == 2
    info = find(samples, "volta_gpu_info", gpu="1")[0].labels
    assert info == {"gpu": "1", "bus_id": "00000000:19:00.0", "name": "Tesla V100-SXM2-32GB",
                    "uuid": "GPU-00000000-0000-0000-0000-000000000001", "driver_version": "580.159.04"}
    assert value(samples, "volta_gpu_utilization_ratio", gpu="0") == pytest.approx(0.37)
    assert value(samples, "volta_gpu_memory_total_bytes", gpu="0") == 34359738368
    assert value(samples, "volta_gpu_power_watts", gpu="0") == 44
    assert value(samples, "volta_gpu_power_limit_watts", gpu="0") == 300
    assert value(samples, "volta_gpu_clock_hertz", gpu="0", clock="sm") == 1530e6
    assert value(samples, "volta_gpu_clock_hertz", gpu="0", clock="memory") == 877e6
    assert value(samples, "volta_gpu_ecc_errors", gpu="0", error="corrected", counter="aggregate") == 10
    assert value(samples, "volta_gpu_pcie_link_width", gpu="0", which="max") == 16
    assert value(samples, "volta_gpu_retired_pages_pending", gpu="0") == 0
    assert value(samples, "volta_gpu_retired_pages", gpu="0", cause="double_bit") == 0
    assert not find(samples, "volta_gpu_exporter_nvml_errors")


def test_throttle_bits_become_one_series_per_reason():
    samples = vx.read_nvml(FakeNvml([v100(0, reasons=0x1 | 0x40)]), {})
    active = {s.labels["reason"] for s in find(samples, "volta_gpu_throttle_active") if s.value == 1}
    assert active == {"gpu_idle", "hw_thermal"}
    assert len(find(samples, "volta_gpu_throttle_active")) == 9


def test_nvlink_counters_on_active_links_only_and_links_end_at_invalid_argument():
    samples = vx.read_nvml(FakeNvml([v100(0)]), {})
    links = {s.labels["link"] for s in find(samples, "volta_gpu_nvlink_errors")}
    assert links == {"0", "1", "3", "4", "5"}
    assert value(samples, "volta_gpu_nvlink_errors", link="3", counter="crc_flit") == 302


def test_uncorrectable_ecc_and_pending_retirement():
    gpu = v100(0, ecc={(0, 0): 0, (0, 1): 4, (1, 0): 1, (1, 1): 2}, retired={0: [0x1000], 1: [0x2000, 0x3000]},
               pending=1)
    samples = vx.read_nvml(FakeNvml([gpu]), {})
    assert value(samples, "volta_gpu_ecc_errors", error="uncorrected", counter="volatile") == 1
    assert value(samples, "volta_gpu_retired_pages", cause="double_bit") == 2
    assert value(samples, "volta_gpu_retired_pages", cause="single_bit") == 1
    assert value(samples, "volta_gpu_retired_pages_pending") == 1


def test_not_supported_leaves_the_series_out_without_an_error():
    gpu = v100(0, nvlink=None, fail={"nvmlDeviceGetTotalEccErrors": NOT_SUPPORTED,
                                     "nvmlDeviceGetPowerUsage": NOT_SUPPORTED})
    samples = vx.read_nvml(FakeNvml([gpu]), {})
    assert not find(samples, "volta_gpu_ecc_errors")
    assert not find(samples, "volta_gpu_power_watts")
    assert not find(samples, "volta_gpu_nvlink_errors")
    assert find(samples, "volta_gpu_power_limit_watts")
    assert not find(samples, "volta_gpu_exporter_nvml_errors")


def test_other_errors_are_reported_and_logged(caplog):
    gpu = v100(0, fail={"nvmlDeviceGetTemperature": GPU_IS_LOST})
    samples = vx.read_nvml(FakeNvml([gpu]), {})
    assert not find(samples, "volta_gpu_temperature_celsius")
    err = find(samples, "volta_gpu_exporter_nvml_errors")
    assert [e.labels for e in err] == [{"gpu": "0", "bus_id": "00000000:18:00.0",
                                        "call": "nvmlDeviceGetTemperature", "error": "GPU is lost"}]
    assert "NVML nvmlDeviceGetTemperature on GPU 0 (00000000:18:00.0): GPU is lost" in caplog.text


def test_a_gpu_whose_handle_fails_is_an_error_not_a_silent_gap():
    samples = vx.read_nvml(FakeNvml([v100(0), v100(1, fail={"handle": GPU_IS_LOST})]), {})
    assert find(samples, "volta_gpu_info", gpu="0")
    assert not find(samples, "volta_gpu_info", gpu="1")
    assert find(samples, "volta_gpu_exporter_nvml_errors", gpu="1", call="nvmlDeviceGetHandleByIndex")


def test_nvml_init_failure_is_nvml_up_0_and_no_gpu_series(caplog):
    samples = vx.read_nvml(FakeNvml([v100(0)], init_error=DRIVER_NOT_LOADED), {})
    assert samples == [vx.Sample("volta_gpu_exporter_nvml_up", {}, 0.0)]
    assert "NVML unavailable: Driver Not Loaded" in caplog.text


def test_missing_gpu_counts_nvml_expected_and_sysfs(tmp_path):
    for i, (vendor, klass) in enumerate([("0x10de", "0x030200"), ("0x10de", "0x030000"), ("0x10de", "0x040300"),
                                         ("0x8086", "0x030000"), ("0x10de", "0x030200")]):
        dev = tmp_path / f"0000:{i:02x}:00.0"
        dev.mkdir()
        (dev / "vendor").write_text(vendor + "\n")
        (dev / "class").write_text(klass + "\n")
    args = SimpleNamespace(expected_gpus=4, sysfs_pci=str(tmp_path))
    samples = vx.scrape(FakeNvml([v100(0), v100(1)]), {}, args, None)
    assert value(samples, "volta_gpu_count") == 2
    assert value(samples, "volta_gpu_expected_count") == 4
    assert value(samples, "volta_gpu_pci_devices") == 3


@pytest.mark.parametrize(("line", "want"), [
    ("NVRM: Xid (PCI:0000:1a:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
     ("00000000:1A:00.0", "79")),
    ("[ 4909.9] NVRM: Xid (0000:01:00): 13, 0005 00000000 0000502d", ("00000000:01:00.0", "13")),
    ("kernel: NVRM: Xid (PCI:0000:18:00): 48, pid=..., DBE (double bit error) ECC error", ("00000000:18:00.0", "48")),
    ("NVRM: GPU at PCI:0000:1a:00: GPU-8ba16ede", None),
    ("NVRM: Xid (PCI:0000:1a:00) 79", None),
])
def test_parse_xid(line, want):
    assert vx.parse_xid(line) == want


@pytest.mark.parametrize(("line", "want"), [
    ('10.0.0.5 - - [03/Dec/2026:20:01:02 +0000] "POST /v1/chat/completions HTTP/1.1" 200 512 "-" "openai/1.0"', "200"),
    ('::1 - - [03/Dec/2026:20:01:02 +0000] "GET /v1/models HTTP/1.1" 401 0 "-" "curl"', "401"),
    ('10.0.0.5 - - [03/Dec/2026:20:01:02 +0000] "GET /x\\x22y HTTP/1.1" 502 0 "-" "-"', "502"),
    ("garbage line", None),
])
def test_parse_access(line, want):
    assert vx.parse_access(line) == want


def _append(path, text):
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def test_file_follower_starts_at_the_end_and_survives_rotation_by_inode(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("old line\n")
    follower = vx.FileFollower(str(log))
    assert follower.poll() == []
    _append(log, "one\ntw")
    assert follower.poll() == ["one"]
    _append(log, "o\n")
    assert follower.poll() == ["two"]
    _append(log, "three\n")
    os.rename(log, tmp_path / "a.log.1")  # logrotate: rename, then nginx reopens a new file
    log.write_text("four\n")
    assert follower.poll() == ["three", "four"]
    log.write_text("5\n")  # copytruncate, seen while the file is shorter than what was read
    assert follower.poll() == ["5"]


def test_log_counters_count_xids_by_gpu_and_responses_by_instance(tmp_path):
    kern = tmp_path / "kern.log"
    kern.write_text("NVRM: Xid (PCI:0000:18:00): 31, before start\n")
    chat = tmp_path / "volta-chat.access.log"
    chat.write_text('1.2.3.4 - - [x] "GET / HTTP/1.1" 200 1 "-" "-"\n')
    logs = vx.LogCounters(vx.FileFollower(str(kern)), str(tmp_path / "volta-*.access.log"))
    _append(kern, "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
                  "NVRM: Xid (PCI:0000:99:00): 79, pid=1, GPU has fallen off the bus.\n")
    _append(chat, '1.2.3.4 - - [x] "GET / HTTP/1.1" 401 1 "-" "-"\n' * 2)
    (tmp_path / "volta-code.access.log").write_text('1.2.3.4 - - [x] "GET / HTTP/1.1" 429 1 "-" "-"\n')
    logs.poll()
    samples = logs.samples({"00000000:18:00.0": "0"})
    assert value(samples, "volta_gpu_xid_errors_total", bus_id="00000000:18:00.0", xid="79") == 1
    assert find(samples, "volta_gpu_xid_errors_total", bus_id="00000000:18:00.0", xid="79")[0].labels["gpu"] == "0"
    assert value(samples, "volta_gpu_xid_errors_total", bus_id="00000000:99:00.0", gpu="") == 1
    assert not find(samples, "volta_gpu_xid_errors_total", xid="31")
    assert value(samples, "volta_gateway_responses_total", instance_name="chat", code="401") == 2
    assert not find(samples, "volta_gateway_responses_total", instance_name="chat", code="200")
    assert value(samples, "volta_gateway_responses_total", instance_name="code", code="429") == 1


def test_kmsg_record_message():
    record = (b"4,1234,98765432,-,caller=T42;NVRM: Xid (PCI:0000:1a:00): 79, pid=7, GPU has fallen off the bus.\n"
              b" SUBSYSTEM=pci\n DEVICE=+pci:0000:1a:00.0\n")
    assert vx.parse_xid(vx.kmsg_message(record)) == ("00000000:1A:00.0", "79")


def test_every_emitted_name_is_in_the_contract_table():
    doc = (ROOT / "docs/operations.md").read_text(encoding="utf-8")
    for name in vx.METRICS:
        assert f"`{name}" in doc, name


def test_the_exporter_emits_the_monitoring_contract_plus_its_error_series():
    from ansible_collections.volta.serving.plugins.plugin_utils._monitoring import CONTRACT_METRICS

    assert set(vx.METRICS) - {"volta_gpu_exporter_nvml_errors"} == set(CONTRACT_METRICS)


def test_the_monitoring_side_takes_an_unset_exporter_setting_from_the_role_defaults():
    import yaml
    from ansible_collections.volta.serving.plugins.plugin_utils import _monitoring

    defaults = yaml.safe_load((ROOT / "roles/exporters/defaults/main.yml").read_text(encoding="utf-8"))
    assert {k: _monitoring._setting({}, k) for k in _monitoring.EXPORTER_SETTINGS} == {
        "exporters_listen_address": "127.0.0.1", "exporters_port": 9402, "exporters_node_exporter_port": 9100,
        "exporters_node_exporter_enabled": True}
    assert {k: defaults[k] for k in _monitoring.EXPORTER_SETTINGS} == {
        k: _monitoring._setting({}, k) for k in _monitoring.EXPORTER_SETTINGS}
    assert _monitoring._setting({"exporters_port": 9500}, "exporters_port") == 9500
