# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight (roles/preflight) reports of a host, on the controller.

Pure Python, no Ansible imports. Served by the filters of plugins/filter/preflight_report.py:

- ``gpu_text``: the GPUs read (volta.serving.gpu_facts' ``volta_gpu``), or why they could not be read;
- ``platform_text``: the distribution and glibc (or why glibc was not read);
- ``platform_note``: why glibc was not read (a controller-only run, or the command's failure);
- ``skipped_text``: the rules of the serving plan that did not run, or that every rule ran.
"""

from __future__ import annotations

CONTROLLER_ONLY = "controller only (volta_preflight_detect=false): the host was not contacted"


def gpu_text(gpu):
    """``8 x Tesla V100-SXM2-32GB, compute 7.0, driver 570.1 (loaded 570.1), NVLink islands [[0, 1]]`` when the
    GPUs were read (status ok), else ``GPUs not readable yet (STATUS): MESSAGE``."""
    if gpu.get("status") != "ok":
        return f"GPUs not readable yet ({gpu.get('status')}): {gpu.get('message')}"
    islands = [list(island) if isinstance(island, (list, tuple)) else island for island in gpu["nvlink_islands"]]
    return (f"{int(gpu['gpu_count'])} x {gpu['gpus'][0]['name']}, compute {gpu['min_compute_capability']}, driver "
            f"{gpu['driver_version']} (loaded {gpu['loaded_driver_version']}), NVLink islands {islands}")


def platform_text(platform):
    """``Ubuntu 24.04, glibc 2.39``, or ``..., glibc not read: NOTE`` (preflight's __preflight_platform)."""
    glibc = platform.get("glibc") or f"glibc not read: {platform.get('note')}"
    return f"{platform.get('distribution')} {platform.get('version')}, {glibc}"


def platform_note(glibc, detect, command):
    """Why glibc was not read: a controller-only run (not *detect*), or *command* failed (its stderr, else its
    rc); "" when it was read. *glibc* is the command's result ({rc, stdout, stderr}, {} when it did not run)."""
    if not detect:
        return CONTROLLER_ONLY
    glibc = glibc or {}
    if glibc.get("rc", 0) == 0:
        return ""
    why = str(glibc.get("stderr") or "").strip() or f"rc {glibc.get('rc', '?')}"
    return f"{' '.join(str(part) for part in command)} failed: {why}"


def skipped_text(skipped):
    """``not run (2): a; b``, or ``every rule ran``."""
    skipped = list(skipped or [])
    return f"not run ({len(skipped)}): {'; '.join(skipped)}" if skipped else "every rule ran"
