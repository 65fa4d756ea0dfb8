# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_service_restart.py: engine_service's restart decisions."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _service_restart as sr

STALE = [
    {"name": "chat", "engine": "vllm", "install": "vllm-b", "previous": "vllm-a"},
    {"name": "fresh", "engine": "vllm", "install": "vllm-b", "previous": ""},
    {"name": "fixed", "engine": "vllm", "install": "vllm-b", "previous": "vllm-b"},
]
CHAT = {"name": "chat", "unit": "volta-chat.service", "drain": False}
REPLICA = {"name": "svc-a", "unit": "volta-svc-a.service", "drain": True}
CLEAN = {"failed": False, "restarted": [], "skipped": [], "instance": None, "unit": None, "msg": "", "journal": []}
URL = "http://127.0.0.1:18001/health"


@pytest.mark.parametrize(("name", "expected"), [
    ("chat", "its unit changed; its engine install changed from vllm-a to vllm-b"),
    ("fresh", "its API key changed; no record of the engine install it runs, now vllm-b"),
    ("fixed", "not running; its engine install vllm-b was repaired"),
    ("other", ""),
])
def test_reasons(name, expected):
    assert sr.reasons(name, ["chat"], ["fresh"], ["fixed"], STALE) == expected


def outcome(restart=None, health=None, completion=None, journal=()):
    return {"host": "gpu-a", "url": URL, "timeout": 60, "restart": restart or {"changed": True},
            "health": health if health is not None else {"status": 200},
            "completion": completion or {"skipped": True}, "journal": list(journal)}


@pytest.mark.parametrize(("instance", "result", "expected_msg"), [
    (CHAT, outcome(), None),
    (CHAT, outcome(restart={"failed": True, "msg": "Unit not found"}, health={"skipped": True}),
     "gpu-a: volta-chat.service did not restart: Unit not found."),
    (CHAT, outcome(health={"status": -1, "msg": "Connection refused"}),
     f"gpu-a: volta-chat.service did not answer {URL} with 200 within 60 s (last: Connection refused)."),
    (CHAT, outcome(health={"status": 503}),
     f"gpu-a: volta-chat.service did not answer {URL} with 200 within 60 s (last: no answer)."),
    (REPLICA, outcome(completion={"status": 200}), None),
    (REPLICA, outcome(completion={"status": 400}),
     "gpu-a: volta-svc-a.service answered /health but not a completion (POST /v1/completions: status 400), so it "
     "did not rejoin its service."),
    (REPLICA, outcome(),
     "gpu-a: volta-svc-a.service answered /health but not a completion (POST /v1/completions: status none), so it "
     "did not rejoin its service."),
])
def test_record(instance, result, expected_msg):
    out = sr.record(dict(CLEAN, restarted=["x"]), instance, dict(result, journal=["line"]))
    if expected_msg is None:
        assert out == dict(CLEAN, restarted=["x", instance["name"]])
        return
    assert out == dict(CLEAN, restarted=["x"], failed=True, instance=instance["name"], unit=instance["unit"],
                       journal=["line"], msg=expected_msg + f" Fix: read the journal lines below (journalctl -u "
                       f"{instance['unit']}), then rerun; engine_service_health_timeout bounds the wait.")


FAILED = dict(CLEAN, failed=True, instance="chat", unit="volta-chat.service", msg="chat did not answer.",
              journal=[f"j{i}" for i in range(10)])


@pytest.mark.parametrize(("result", "expected"), [
    (CLEAN, {}),
    (dict(FAILED, instance="fresh"), {}),
    (dict(FAILED, instance="other"), {}),
    (FAILED, dict(STALE[0], reason="failed at step 'health check after restart on the new engine install': "
                  "instance chat did not come back on vllm-b. chat did not answer. Last journal lines: "
                  "j2 | j3 | j4 | j5 | j6 | j7 | j8 | j9")),
])
def test_rollback(result, expected):
    assert sr.rollback(STALE, result) == expected


def test_failure():
    assert sr.failure(dict(FAILED, journal=["a", "b"])) == "chat did not answer.\nLast journal lines:\na\nb"


@pytest.mark.parametrize(("served", "stat", "expected"), [
    ("", {}, (False, "no model is recorded as having answered on this instance")),
    ("/m/new", {"exists": True}, (False, "it already ran /m/new when it last answered (the model did not change)")),
    ("/m/old", {"exists": False}, (False, "the model it answered on, /m/old, is no longer on disk (model_keep 0 "
                                          "removes older revisions; keep at least 1 to be able to go back)")),
    ("/m/old", {"exists": True}, (True, "")),
])
def test_switch_back(served, stat, expected):
    assert sr.switch_back(served, "/m/new", stat) == expected


CHANGES = {"units": ["b"], "keys": ["a", "b"], "inactive": ["c"], "stale": [{"name": "a"}, {"name": "d"}],
           "ray_members": ["e", "b"]}


def test_to_restart_names_each_instance_once_in_order():
    assert sr.to_restart(CHANGES) == ["b", "a", "c", "d", "e"]
    assert sr.to_restart({}) == []


def test_change_reasons_reads_the_same_changes():
    assert sr.change_reasons("b", CHANGES) == "its unit changed; its API key changed"


ENABLED = [{"name": "a", "engine": "vllm", "unit": "volta-a.service"},
           {"name": "b", "engine": "llamacpp", "unit": "volta-b.service"}]


@pytest.mark.parametrize(("names", "engines", "expected"), [
    ([], [], ["a", "b"]),
    (["b"], [], ["b"]),
    ([], ["vllm"], ["a"]),
    (["b"], ["vllm"], []),
    ([""], [], []),
])
def test_selected(names, engines, expected):
    assert [i["name"] for i in sr.selected(ENABLED, names, engines)] == expected


@pytest.mark.parametrize(("marked", "ray", "expected"), [
    (["volta-a.service", "volta-x.service", "volta-ray.service"], None, ["volta-ray.service", "volta-x.service"]),
    (["volta-a.service", "volta-x.service", "volta-ray.service"], {"unit": "volta-ray.service"}, ["volta-x.service"]),
    ([], None, []),
])
def test_stale_units(marked, ray, expected):
    assert sr.stale_units(marked, ENABLED, ray) == expected


def test_fail_message():
    assert sr.fail_message("it failed", {}, {}) == "it failed"
    assert sr.fail_message("it failed", {"reason": "why"}, {"flavour": "vllm", "from": "", "to": "vllm-a"}) == (
        "why; rolled vllm back from nothing to vllm-a")
