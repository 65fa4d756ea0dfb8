# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Calls through the gateway, on the host: /health without a key (until it answers 200, a few
tries) and, with a key, /v1/models. Pure Python over a ``fetch(url, headers) -> status`` and a
``sleep(seconds)`` given by the module (plugins/modules/gateway_probe.py), so that the retries and
what is reported are unit tested without a network. A key only ever goes into a header.
"""

from __future__ import annotations

# What an instance's call reports when no HTTP answer came (refused, timed out, TLS failed).
NO_ANSWER = -1


def health(fetch, sleep, url, retries, delay):
    """The status of GET url: 200 as soon as it comes, else the last status after retries more tries."""
    status = fetch(url, {})
    for _attempt in range(retries):
        if status == 200:
            break
        sleep(delay)
        status = fetch(url, {})
    return status


def probe(instances, fetch, sleep, retries, delay):
    """[{name, health, models}] for each instance (models None when no key was given), in order."""
    out = []
    for inst in instances:
        base = inst["url"].rstrip("/")
        row = {"name": inst["name"], "health": health(fetch, sleep, base + inst["health_path"], retries, delay),
               "models": None}
        if inst.get("key"):
            row["models"] = fetch(base + "/v1/models", {"Authorization": "Bearer " + inst["key"]})
        out.append(row)
    return out


def failing(rows):
    """The names of the rows whose /health (and /v1/models, when called) did not answer 200."""
    return [row["name"] for row in rows if row["health"] != 200 or row["models"] not in (None, 200)]
