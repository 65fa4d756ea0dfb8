# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress line of a long step (volta.serving.long_step_wait): elapsed time and the log's last line.

Pure Python, no Ansible imports, so unit tests import it directly.
"""

from __future__ import annotations

import re

# Terminal escapes (colours, cursor moves) and other control characters of a build log.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
LINE_LIMIT = 160


def elapsed(seconds):
    """``45s``, ``3m20s``, ``1h02m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def last_line(text, limit=LINE_LIMIT):
    """The last non-empty line of *text*, without escapes or control characters, at most *limit* characters.

    A progress line rewritten in place (``\\r``, as ninja and pip print them) counts as its last state.
    """
    for raw in reversed(str(text or "").splitlines()):
        line = _ESCAPES.sub("", raw.rsplit("\r", 1)[-1]).strip()
        if line:
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def progress(host, step, seconds, line):
    """``host: step: 3m20s elapsed; log: <last line>`` (``log is empty so far`` without one).

    *line* None: a step that writes no log (a download by a module), ``host: step: 3m20s elapsed``."""
    if line is None:
        return f"{host}: {step}: {elapsed(seconds)} elapsed"
    tail = f"log: {line}" if line else "log is empty so far"
    return f"{host}: {step}: {elapsed(seconds)} elapsed; {tail}"
