# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine's systemd unit may touch (devices, socket families) and its start limit.

Pure Python, no Ansible imports. ``unit_sandbox(gpu_count)`` is the part of the plan that the
engine_service template renders as ``DeviceAllow=`` and ``RestrictAddressFamilies=``;
``check_start_limit(host, units)`` refuses a start limit that can never trip.

Sources (the reasons are repeated in roles/engine_service/templates/engine.service.j2):
- /proc/devices names of the NVIDIA driver: ``nvidia-frontend`` (major 195: /dev/nvidia<N>,
  /dev/nvidiactl, /dev/nvidia-modeset) and ``nvidia-uvm`` (/dev/nvidia-uvm, /dev/nvidia-uvm-tools;
  a dynamic major). The explicit paths are listed as well: systemd resolves ``char-<name>`` from
  /proc/devices when the unit starts, and a driver that registers its major under another name
  would otherwise be denied everything.
- /dev/nvidia-caps (MIG capabilities) is left out: the V100 has no MIG.
- glibc's getifaddrs() uses an AF_NETLINK socket; NCCL's bootstrap, Gloo and ZeroMQ list the
  interfaces with it. AF_UNIX: vLLM's ZeroMQ ipc:// sockets and NCCL's proxy (CUDA IPC handles are
  passed as file descriptors); AF_INET/AF_INET6: the API port, torch.distributed's TCP store.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding

NVIDIA_DEVICE_GROUPS = ("char-nvidia-frontend", "char-nvidia-uvm")
NVIDIA_CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
ADDRESS_FAMILIES = ("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK")
UNIT_KEYS = ("restart_sec", "start_limit_interval", "start_limit_burst")
# engine_service's defaults: at most 5 starts in 10 minutes, then the unit stays failed.
DEFAULT_UNITS = {"restart_sec": 10, "start_limit_interval": 600, "start_limit_burst": 5}


def _count(value):
    """*value* as a non-negative int, or None (bools are not counts)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def unit_sandbox(gpu_count):
    """``{"device_allow": [...], "address_families": [...]}`` for a host with *gpu_count* GPUs."""
    gpus = _count(gpu_count) or 0
    nodes = list(NVIDIA_CONTROL_NODES) + [f"/dev/nvidia{index}" for index in range(gpus)]
    return {
        "device_allow": [f"{name} rw" for name in (*NVIDIA_DEVICE_GROUPS, *nodes)],
        "address_families": list(ADDRESS_FAMILIES),
    }


def _positive_problems(host, units):
    findings = []
    for key in UNIT_KEYS:
        value = units.get(key)
        number = _count(value)
        if number is None or (number == 0 and key != "restart_sec"):
            least = "0" if key == "restart_sec" else "1"
            findings.append(
                finding(
                    "invalid-value",
                    host,
                    None,
                    f"engine_service_{key}",
                    f"engine_service_{key} is {value!r}, not a whole number of at least {least}.",
                    "it is written into every engine unit (RestartSec=, StartLimitIntervalSec=, StartLimitBurst=).",
                    f"set engine_service_{key} to a whole number of at least {least}.",
                )
            )
    return findings


def check_start_limit(host, units):
    """Findings for engine_service_restart_sec / _start_limit_interval / _start_limit_burst.

    The limit only trips when *burst* starts fit in the interval: restarts come at least
    restart_sec apart, so (burst - 1) x restart_sec must be shorter than the interval.
    """
    units = {**DEFAULT_UNITS, **{k: v for k, v in (units or {}).items() if v is not None}}
    findings = _positive_problems(host, units)
    if findings:
        return findings
    restart, interval, burst = (_count(units[key]) for key in UNIT_KEYS)
    if (burst - 1) * restart < interval:
        return []
    return [
        finding(
            "invalid-value",
            host,
            None,
            "engine_service_start_limit_interval",
            f"{burst} starts, {restart} s apart (engine_service_restart_sec), take {(burst - 1) * restart} s, "
            f"not less than engine_service_start_limit_interval {interval} s: the start limit never trips.",
            "a broken engine would restart forever instead of ending in the failed state.",
            f"set engine_service_start_limit_interval above {(burst - 1) * restart}, or lower "
            "engine_service_start_limit_burst or engine_service_restart_sec.",
        )
    ]
