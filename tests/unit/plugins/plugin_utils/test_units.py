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


# The settings registry's checkers of engine_service (settings_checks/engine_service.yml), issue 52: what
# reaches a unit line or the Ray token file.
INJECTIONS = ["x\nExecStartPre=+/bin/sh", "x;y", "x{", "x}", "x#y", 'x"y', "x'y"]


@pytest.mark.parametrize(("check", "good"), [
    (_units.check_user, "volta"),
    (_units.check_group, "volta"),
    (_units.check_writable_dir, "/var/lib/volta"),
])
def test_a_text_setting_refuses_every_injection(check, good):
    assert check(good) is None
    for value in INJECTIONS:
        assert check(value), value


@pytest.mark.parametrize(("check", "good"), [
    (_units.check_device_groups, ["video", "render"]),
    (_units.check_read_write_paths, ["/srv/volta-scratch", "/data/hf_cache"]),
    (_units.check_ip_address_allow, ["localhost", "10.20.0.0/16", "192.0.2.7", "2001:db8::/48", "link-local"]),
])
def test_a_list_setting_refuses_every_injection(check, good):
    assert check(good) is None and check([]) is None
    for value in INJECTIONS:
        why, fix = check([*good, value])
        assert why.startswith(f"entry {len(good) + 1} of the list: "), why
        assert "{var}" in fix
    assert check("/srv/data")[0] == '"/srv/data" is not a list'


@pytest.mark.parametrize(("check", "value", "why"), [
    (_units.check_user, "root", '"root" is the superuser: the engines would run with root\'s rights'),
    (_units.check_user, 0, "0 is the superuser (id 0)"),
    (_units.check_user, "1000", '"1000" is a number: the role creates and checks the user by name'),
    (_units.check_user, "www-data", '"www-data" is an account of the system or of another service'),
    (_units.check_group, "0", '"0" is the superuser\'s group (id 0)'),
    (_units.check_group, "docker", '"docker" gives the engines more than the GPUs: the Docker socket is root'),
    (_units.check_device_groups, ["video", "root"], 'entry 2 of the list: "root" is the superuser\'s group'),
    (_units.check_read_write_paths, ["/"], 'entry 1 of the list: "/" is the root of the file system'),
    (_units.check_read_write_paths, ["/etc"], '"/etc" is the system\'s configuration'),
    (_units.check_read_write_paths, ["/usr/local/bin"], '"/usr/local/bin" is inside /usr, the system\'s programs'),
    (_units.check_read_write_paths, ["/boot"], '"/boot" is the kernel and the boot loader'),
    (_units.check_read_write_paths, ["/root/.cache"], '"/root/.cache" is inside /root, the superuser\'s home'),
    (_units.check_read_write_paths, ["/var"], '"/var" is the parent of every service\'s state, logs and queues'),
    (_units.check_read_write_paths, ["/var/spool/cron"], '"/var/spool/cron" is inside /var/spool'),
    (_units.check_read_write_paths, ["data/cache"], '"data/cache" is not an absolute path'),
    (_units.check_read_write_paths, ["/srv/../etc"], "is not written plainly"),
    (_units.check_writable_dir, "/opt", '"/opt" is the parent of the installed software'),
    (_units.check_ip_address_allow, ["any"], 'entry 1 of the list: "any" allows every address'),
    (_units.check_ip_address_allow, ["0.0.0.0/0"], '"0.0.0.0/0" allows every IPv4 address'),
    (_units.check_ip_address_allow, ["::/0"], '"::/0" allows every IPv6 address'),
    (_units.check_ip_address_allow, ["0.0.0.0/1"], '"0.0.0.0/1" is wider than a /8'),
    (_units.check_ip_address_allow, ["fe80::1%eth0"], "carries a zone id"),
    (_units.check_count, 0, "0 is not a whole number of at least 1"),
    (_units.check_count_or_zero, -1, "-1 is not a whole number of at least 0"),
])
def test_root_every_address_and_system_directories_are_refused(check, value, why):
    refused = check(value)
    assert refused and why in refused[0], refused


TOKEN = "Q7vJ2mXc9LpR4tWz8NbK3hYd6FsG1aEu"  # noqa: S105  a test token, never used anywhere


@pytest.mark.parametrize(("token", "why"), [
    ("short-Q7vJ2mXc", "the token (not shown) is 14 characters long, shorter than 32"),
    ("replace-me-with-a-random-token-0123456789", "reads like a placeholder"),
    ("changeme" * 5, "reads like a placeholder"),
    ("ab" * 20, "reads like a placeholder"),
    (TOKEN + "\nExecStartPre=x", "contains whitespace or a control character"),
    (TOKEN + ";x{y}", "contains characters other than"),
    (12345, "the token (not shown) is not text"),
])
def test_a_weak_ray_token_is_refused_and_never_shown(token, why):
    refused = _units.check_ray_token(token)
    assert refused and why in refused[0]
    assert str(token) not in " ".join(refused) and (not isinstance(token, str) or token[:8] not in " ".join(refused))
    assert "openssl rand -hex 32" in refused[1]


def test_an_empty_or_random_ray_token_passes():
    assert _units.check_ray_token("") is None
    assert _units.check_ray_token(TOKEN) is None
