# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine units' sandbox and start limit (plugins/plugin_utils/_units.py), through build_report.

Before: the units had no DevicePolicy (every device of the host), no RestrictAddressFamilies, and
systemd's default start limit (5 starts in 10 s) never tripped with RestartSec=10, so a broken
engine restarted forever.
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _units
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 2, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip


def report(units=None):
    return build_report(PlanInputs("unit-host", SERVER, [], units=units))


def messages(units):
    return [f["message"] for f in report(units)["findings"] if f["severity"] == "error"]


def test_sandbox_allows_the_nvidia_devices_of_the_host_only():
    sandbox = report()["plan"]["unit_sandbox"]
    assert sandbox["device_allow"] == [
        "char-nvidia-frontend rw",
        "char-nvidia-uvm rw",
        "/dev/nvidiactl rw",
        "/dev/nvidia-uvm rw",
        "/dev/nvidia-uvm-tools rw",
        "/dev/nvidia0 rw",
        "/dev/nvidia1 rw",
    ]
    assert not any("caps" in rule or "dri" in rule for rule in sandbox["device_allow"])


def test_sandbox_socket_families_include_netlink_for_getifaddrs():
    assert report()["plan"]["unit_sandbox"]["address_families"] == ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]


@pytest.mark.parametrize("gpu_count", [None, -1, "x", True])
def test_sandbox_of_a_server_without_a_usable_gpu_count_names_no_gpu_node(gpu_count):
    rules = _units.unit_sandbox(gpu_count)["device_allow"]
    assert not any(rule.startswith("/dev/nvidia0") for rule in rules)
    assert "char-nvidia-frontend rw" in rules


def test_defaults_trip():
    assert messages(None) == []
    assert messages({"restart_sec": 10, "start_limit_interval": 600, "start_limit_burst": 5}) == []


def test_a_start_limit_that_cannot_trip_is_refused():
    (message,) = messages({"restart_sec": 300, "start_limit_interval": 600, "start_limit_burst": 5})
    assert message.startswith("unit-host: host-wide: field engine_service_start_limit_interval: 5 starts, 300 s apart")
    assert "take 1200 s, not less than engine_service_start_limit_interval 600 s: the start limit never trips." in (
        message
    )
    assert "Fix: set engine_service_start_limit_interval above 1200" in message


@pytest.mark.parametrize(
    ("key", "value", "least"),
    [
        ("start_limit_burst", 0, "1"),
        ("start_limit_burst", -2, "1"),
        ("start_limit_interval", "ten", "1"),
        ("restart_sec", -1, "0"),
        ("restart_sec", True, "0"),
    ],
)
def test_values_that_are_not_counts_are_refused(key, value, least):
    (message,) = messages({key: value})
    assert (
        f"field engine_service_{key}: engine_service_{key} is {value!r}, not a whole number of at least {least}."
        in message
    )
