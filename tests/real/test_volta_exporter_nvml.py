"""volta-exporter on the real nvidia-ml-py and prometheus-client wheels (the role's pins), against the
NVML stand-in library (tests/lab/nvml-sim: a C ``libnvidia-ml.so.1`` built here with the machine's cc).

The real pynvml loads the stand-in through ``LD_LIBRARY_PATH`` exactly as it loads the driver's
library (``CDLL("libnvidia-ml.so.1")``), so the symbol names, argument types and struct layouts
the real bindings use are exercised; the exposition text comes from the real prometheus-client.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import artifacts
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXPORTER = ROOT / "roles/exporters/files/volta_exporter.py"
NVML_SIM = ROOT / "tests/lab/nvml-sim"
DEFAULTS = yaml.safe_load((ROOT / "roles/exporters/defaults/main.yml").read_text(encoding="utf-8"))

sys.path.insert(0, str(NVML_SIM))
import nvml_state  # noqa: E402


@pytest.fixture(scope="module")
def wheels():
    return [str(artifacts.fetch("nvidia-ml-py", DEFAULTS["exporters_nvidia_ml_py_version"])),
            str(artifacts.fetch("prometheus-client", DEFAULTS["exporters_prometheus_client_version"]))]


@pytest.fixture(scope="module")
def libdir(tmp_path_factory):
    out = tmp_path_factory.mktemp("nvml-sim")
    proc = subprocess.run([str(NVML_SIM / "build"), str(out)], check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"tests/lab/nvml-sim/build failed: {proc.stderr.strip()}")
    return out


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(wheels, libdir, state):
    return {**os.environ, "PYTHONPATH": os.pathsep.join(wheels), "LD_LIBRARY_PATH": str(libdir),
            "VOLTA_NVML_SIM_STATE": str(state)}


def _get(port, deadline=15.0):
    end = time.monotonic() + deadline
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                return resp.read().decode()
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def _append(path, text):
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def test_exposition_on_the_real_wheels_with_injected_faults(wheels, libdir, tmp_path):
    state = tmp_path / "state"
    nvml_state.write(state, nvml_state.apply(nvml_state.state("v100-sxm2-10", count=2), [
        "0 ecc.1.0 2", "0 ecc.1.1 3", "0 retired.1 1", "0 pending 1",
        "1 fail.nvmlDeviceGetTemperature 15", "1 fail.nvmlDeviceGetTotalEccErrors 3"]))
    kern, access = tmp_path / "kern.log", tmp_path / "volta-chat.access.log"
    kern.write_text("NVRM: Xid (PCI:0000:18:00): 31, before the exporter started\n")
    access.write_text("")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(EXPORTER), "--port", str(port), "--expected-gpus", "3", "--kernel-log", str(kern),
         "--gateway-logs", str(tmp_path / "volta-*.access.log"), "--sysfs-pci", str(tmp_path / "nosysfs")],
        env=_env(wheels, libdir, state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _get(port)
        _append(kern, "NVRM: Xid (PCI:0000:18:00): 48, pid=4242, name=python3, DBE (double bit error) ECC error\n")
        _append(access, '10.0.0.5 - - [03/Dec/2026:20:01:02 +0000] "POST /v1/chat/completions HTTP/1.1" 502 0 '
                        '"-" "openai"\n')
        text = _get(port)
    finally:
        proc.terminate()
        log = proc.communicate(timeout=10)[0]
    g0 = 'bus_id="00000000:18:00.0",gpu="0"'
    for line in [
        "volta_gpu_exporter_nvml_up 1.0",
        "volta_gpu_count 2.0",
        "volta_gpu_expected_count 3.0",
        "# TYPE volta_gpu_xid_errors_total counter",
        'volta_gpu_ecc_errors{bus_id="00000000:18:00.0",counter="volatile",error="uncorrected",gpu="0"} 2.0',
        'volta_gpu_ecc_errors{bus_id="00000000:18:00.0",counter="aggregate",error="uncorrected",gpu="0"} 3.0',
        'volta_gpu_retired_pages{bus_id="00000000:18:00.0",cause="double_bit",gpu="0"} 1.0',
        f"volta_gpu_retired_pages_pending{{{g0}}} 1.0",
        'volta_gpu_retired_pages_pending{bus_id="00000000:19:00.0",gpu="1"} 0.0',
        f"volta_gpu_power_limit_watts{{{g0}}} 300.0",
        f"volta_gpu_temperature_celsius{{{g0}}} 34.0",
        'volta_gpu_clock_hertz{bus_id="00000000:18:00.0",clock="sm",gpu="0"} 1.53e+09',
        'volta_gpu_throttle_active{bus_id="00000000:18:00.0",gpu="0",reason="gpu_idle"} 1.0',
        'volta_gpu_nvlink_errors{bus_id="00000000:18:00.0",counter="crc_flit",gpu="0",link="5"} 0.0',
        'volta_gpu_pcie_link_width{bus_id="00000000:18:00.0",gpu="0",which="max"} 16.0',
        'volta_gpu_xid_errors_total{bus_id="00000000:18:00.0",gpu="0",xid="48"} 1.0',
        'volta_gateway_responses_total{code="502",instance_name="chat"} 1.0',
        'volta_gpu_exporter_nvml_errors{bus_id="00000000:19:00.0",call="nvmlDeviceGetTemperature",'
        'error="GPU is lost",gpu="1"} 1.0',
    ]:
        assert line in text.splitlines(), f"{line!r} not in the exposition:\n{text}"
    assert 'xid="31"' not in text  # before the exporter started
    assert 'volta_gpu_temperature_celsius{bus_id="00000000:19:00.0"' not in text  # GPU_IS_LOST: reported, absent
    assert 'volta_gpu_ecc_errors{bus_id="00000000:19:00.0"' not in text  # NOT_SUPPORTED: absent, no error
    assert "nvmlDeviceGetTotalEccErrors" not in text
    assert "NVML nvmlDeviceGetTemperature on GPU 1 (00000000:19:00.0): GPU is lost" in log


def test_driver_not_loaded_is_nvml_up_0_with_the_reason(wheels, libdir, tmp_path):
    state = tmp_path / "state"
    nvml_state.write(state, nvml_state.apply(nvml_state.state(count=1), ["init_error 9"]))
    proc = subprocess.run([sys.executable, str(EXPORTER), "--once", "--kernel-log", "", "--gateway-logs", "",
                           "--expected-gpus", "1"], env=_env(wheels, libdir, state),
                          capture_output=True, text=True, timeout=60, check=True)
    assert "volta_gpu_exporter_nvml_up 0.0" in proc.stdout.splitlines()
    assert "volta_gpu_expected_count 1.0" in proc.stdout.splitlines()
    assert "volta_gpu_info" not in proc.stdout.replace("# HELP volta_gpu_info", "")
    assert "NVML unavailable: Driver Not Loaded" in proc.stderr
