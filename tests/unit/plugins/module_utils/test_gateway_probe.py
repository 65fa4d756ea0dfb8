# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _gateway_probe: retries of /health, /v1/models with the key, what fails."""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.module_utils import _gateway_probe as gp


class Gateway:
    """Answers from a script of statuses per URL; records every call and every sleep."""

    def __init__(self, answers):
        self.answers = {url: list(statuses) for url, statuses in answers.items()}
        self.calls, self.sleeps = [], []

    def fetch(self, url, headers):
        self.calls.append((url, headers))
        statuses = self.answers[url]
        return statuses.pop(0) if len(statuses) > 1 else statuses[0]

    def sleep(self, seconds):
        self.sleeps.append(seconds)


CHAT = {"name": "chat", "url": "http://127.0.0.1:8001/", "health_path": "/health"}


def test_health_retries_until_200():
    gw = Gateway({"http://127.0.0.1:8001/health": [502, -1, 200]})
    rows = gp.probe([CHAT], gw.fetch, gw.sleep, retries=5, delay=2)
    assert rows == [{"name": "chat", "health": 200, "models": None}]
    assert gw.sleeps == [2, 2]
    assert gp.failing(rows) == []


def test_health_gives_up_after_the_retries():
    gw = Gateway({"http://127.0.0.1:8001/health": [503]})
    rows = gp.probe([CHAT], gw.fetch, gw.sleep, retries=3, delay=1)
    assert rows[0]["health"] == 503 and len(gw.calls) == 4
    assert gp.failing(rows) == ["chat"]


def test_models_called_with_the_key_in_a_header_only():
    gw = Gateway({"http://127.0.0.1:8001/health": [200], "http://127.0.0.1:8001/v1/models": [401]})
    rows = gp.probe([dict(CHAT, key="k" * 32)], gw.fetch, gw.sleep, retries=0, delay=2)
    assert rows == [{"name": "chat", "health": 200, "models": 401}]
    assert gw.calls[1] == ("http://127.0.0.1:8001/v1/models", {"Authorization": "Bearer " + "k" * 32})
    assert gw.calls[0][1] == {}
    assert gp.failing(rows) == ["chat"]
