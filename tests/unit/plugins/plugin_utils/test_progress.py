# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress line of a long step (volta.serving.long_step_wait)."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils._progress import elapsed, last_line, progress


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (59.9, "59s"), (60, "1m00s"), (200, "3m20s"),
                                           (3599, "59m59s"), (3720, "1h02m"), (-5, "0s")])
def test_elapsed(seconds, text):
    assert elapsed(seconds) == text


@pytest.mark.parametrize("log, line", [
    ("", ""),
    ("a\nb\n\n  \n", "b"),
    # ninja rewrites its status line with \r; colours and other control characters are dropped
    ("[1/9] cc a.o\r[2/9] cc b.o\r\x1b[32m[3/9] Building CUDA object c.o\x1b[0m\n", "[3/9] Building CUDA object c.o"),
    ("x\x07y\n", "xy"),
    ("z" * 200, "z" * 157 + "..."),
])
def test_last_line(log, line):
    assert last_line(log) == line


def test_progress_names_host_step_time_and_log():
    assert progress("server-a", "build vllm", 754.2, "[212/377] Building CUDA object x.o") == (
        "server-a: build vllm: 12m34s elapsed; log: [212/377] Building CUDA object x.o")
    assert progress("server-a", "install torch", 3, "") == "server-a: install torch: 3s elapsed; log is empty so far"
    assert progress("server-a", "download of x", 75, None) == "server-a: download of x: 1m15s elapsed"
