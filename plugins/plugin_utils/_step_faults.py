# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a long step failed, read from its log: a full disk or an unreachable package index.

volta.serving.long_step_wait calls these when a step (a torch or engine install, a build) exits non-zero,
and puts the message first in the step's failure: what happened, the numbers, and what to do.

Pure Python, no Ansible imports, so unit tests import it directly.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._model import human

# What uv, pip, cmake, the compilers and Python print when a write fails for want of space.
DISK_FULL = ("No space left on device", "os error 28", "[Errno 28]", "ENOSPC", "Disk quota exceeded")
# What uv (reqwest/hyper) and pip print when the index cannot be reached.
UNREACHABLE = ("Connection refused", "tcp connect error", "error sending request", "dns error",
               "failed to lookup address", "Name or service not known", "Temporary failure in name resolution",
               "Network is unreachable", "No route to host", "operation timed out", "Connection reset",
               "Max retries exceeded", "Failed to establish a new connection")
_URL = re.compile(r"https?://[^\s`'\")>\]]+")
CAUSE_LIMIT = 240


def classify(text):
    """'disk', 'index' or None for the log *text* of a failed step (a full disk wins: it also breaks fetches)."""
    if any(marker in text for marker in DISK_FULL):
        return "disk"
    if any(marker in text for marker in UNREACHABLE):
        return "index"
    return None


def cause(text, kind):
    """The last log line that shows the fault of *kind*, trimmed."""
    markers = DISK_FULL if kind == "disk" else UNREACHABLE
    lines = [line.strip() for line in text.splitlines() if any(marker in line for marker in markers)]
    return lines[-1][:CAUSE_LIMIT] if lines else ""


def failing_index(text, index_urls):
    """The index (one of *index_urls*) a URL of the log belongs to; else the log's first URL; else all of them."""
    urls = _URL.findall(text)
    for index in sorted((u.rstrip("/") for u in index_urls if u), key=len, reverse=True):
        if any(url.startswith(index) for url in urls):
            return index
    if urls:
        return urls[0].rstrip(".,;:")
    return " or ".join(u for u in index_urls if u) or "the package index"


def parse_df(out):
    """(free bytes, mount point) from the last line of ``df -P -B1 PATH``, or (None, '') if unreadable."""
    lines = [line for line in out.splitlines() if line.strip()]
    fields = lines[-1].split() if lines else []
    if len(fields) < 6 or not fields[3].isdigit():
        return None, ""
    return int(fields[3]), " ".join(fields[5:])


def parse_du(out):
    """Bytes from the first field of ``du -sxB1 PATH`` (None if unreadable)."""
    first = out.split()[0] if out.split() else ""
    return int(first) if first.isdigit() else None


def _bytes(n):
    return "an unknown number of bytes" if n is None else f"{human(n)} ({n} bytes)"


def disk_full_message(host, step, path, written, free, mount, line):
    """The failure of a step that filled the disk: both numbers, where, and the fix."""
    where = mount or "its filesystem"
    return (f"{host}: the disk filled during '{step}' (No space left on device: {line or 'see the log'}); "
            f"{path} had {_bytes(written)} written when it stopped, and {_bytes(free)} are free on {where} "
            f"(the filesystem of {path}); fix: free space on {where} (or move engine_root to a larger filesystem, "
            "or lower engine_keep), then rerun: the unfinished install is removed and made again.")


def index_unreachable_message(host, step, index, line):
    """The failure of a step that could not reach its package index: which, and the fix."""
    return (f"{host}: the package index {index} could not be reached during '{step}' ({line or 'see the log'}); "
            f"fix: make {index} answer from {host} (the index server, DNS, proxy, firewall), then rerun: "
            "the unfinished install is removed and made again.")
