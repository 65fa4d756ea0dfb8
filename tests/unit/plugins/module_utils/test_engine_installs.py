# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for module_utils/_engine_installs.py, on engine roots the tests write."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from ansible_collections.volta.serving.plugins.module_utils._engine_installs import (
    MARKER,
    InstallsError,
    audit_current,
    facts,
    probe,
    prune_plan,
    record_passed,
    render,
    scan,
    unsettled,
    view,
    without,
)

V1 = "vllm-0.20.0-torch2.11.0-cu126"
V2 = "vllm-0.21.0-torch2.11.0-cu126"
V0 = "vllm-0.19.1-torch2.10.0-cu126"


def install(root, flavour, name, mtime, **record):
    path = root / flavour / name
    path.mkdir(parents=True)
    body = {"flavour": flavour, "name": name, "version": name.split("-")[1]} | record
    (path / MARKER).write_text(json.dumps(body))
    os.utime(path / MARKER, (mtime, mtime))
    return path


def link(root, flavour, name):
    (root / flavour / "current").symlink_to(name)


@pytest.fixture
def root(tmp_path):
    install(tmp_path, "vllm", V0, 100)
    install(tmp_path, "vllm", V1, 200, python={"version": "3.11.2", "source": "distribution"}, torch="2.11.0+cu126")
    install(tmp_path, "vllm", V2, 300, torch="2.11.0+cu126", cuda="12.6", patches={"fused_moe_sm70_block_k": "applied"},
            audit={"consistent": True}, binary_audit={"ok": True, "summary": "12 extensions, all run on sm_70"})
    (tmp_path / "vllm" / "vllm-0.22.0-torch2.11.0-cu126").mkdir()  # a failed build: no marker
    (tmp_path / "vllm" / "notes").mkdir()  # not an install directory: never pruned
    (tmp_path / ".tools" / "uv-0.13.9" / "bin").mkdir(parents=True)
    link(tmp_path, "vllm", V1)
    return tmp_path


def test_scan_orders_finished_newest_first_and_reads_the_link(root):
    state = scan(str(root), ["onecat"])
    assert sorted(state) == ["onecat", "vllm"]  # .tools is no flavour; onecat asked for, absent
    got = view(state["vllm"])
    assert got["finished"] == [V2, V1, V0]
    assert got["current"] == V1
    assert got["previous"] == V2  # the newest other finished install
    assert got["unfinished"] == [str(root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126")]
    assert got["records"][V2]["cuda"] == "12.6"
    marker = (root / "vllm" / V2 / MARKER).read_bytes()
    assert got["record_sha256"][V2] == hashlib.sha256(marker).hexdigest()
    assert view(state["onecat"]) == {"dir": str(root / "onecat"), "current": None, "previous": None,
                                     "finished": [], "records": {}, "record_sha256": {}, "unfinished": []}


def test_prune_keeps_service_installing_and_keep_newest(root):
    state = scan(str(root))
    # in service V1, installing V2: keep 1 other -> V0 kept, the failed directory goes
    assert prune_plan(state, {"vllm": V2}, 1) == [str(root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126")]
    install(root, "vllm", "vllm-0.18.0-torch2.10.0-cu126", 50)
    state = scan(str(root))
    assert prune_plan(state, {"vllm": V2}, 1) == sorted([
        str(root / "vllm" / "vllm-0.18.0-torch2.10.0-cu126"), str(root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126")])
    # the failed directory being rebuilt right now is not removed
    assert prune_plan(state, {"vllm": "vllm-0.22.0-torch2.11.0-cu126"}, 2) == [
        str(root / "vllm" / "vllm-0.18.0-torch2.10.0-cu126")]
    assert prune_plan(state, {}, 2) == []


def test_prune_refuses_keep_zero(root):
    with pytest.raises(InstallsError, match="keep must be at least 1"):
        prune_plan(scan(str(root)), {"vllm": V2}, 0)


def test_facts_shape_after_prune(root):
    state = scan(str(root))
    doomed = prune_plan(state, {"vllm": V1}, 1)
    assert doomed == sorted([str(root / "vllm" / V0), str(root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126")])
    fact = facts(str(root), without(state, doomed))
    assert fact == {"root": str(root), "engines": {"vllm": {
        "current": V1, "path": f"{root}/vllm/{V1}", "previous": V2, "installs": [V2, V1],
        "version": "0.20.0", "python": "3.11.2", "torch": "2.11.0+cu126", "cuda": None,
        "patches": {}, "audit": {},
        "binary_audit": {V2: "12 extensions, all run on sm_70", V1: "not audited"}}}}
    text = render(fact)
    assert text.endswith("}\n") and '\n    "engines": {' in text and json.loads(text) == fact


def test_flavour_without_link_and_without_finished(tmp_path):
    install(tmp_path, "llamacpp", "llamacpp-b1-cpu", 10)
    (tmp_path / "onecat" / "onecat-1.5.1-torch2.10.0-cu128").mkdir(parents=True)
    fact = facts(str(tmp_path), scan(str(tmp_path)))
    assert list(fact["engines"]) == ["llamacpp"]  # onecat has no finished install
    assert fact["engines"]["llamacpp"]["current"] is None and fact["engines"]["llamacpp"]["path"] is None
    assert fact["engines"]["llamacpp"]["previous"] == "llamacpp-b1-cpu"


def test_unreadable_record_names_the_file(tmp_path):
    bad = tmp_path / "vllm" / V2
    bad.mkdir(parents=True)
    (bad / MARKER).write_text("{not json")
    with pytest.raises(InstallsError, match=f"{bad}/{MARKER} cannot be read as JSON.*Fix: remove {bad}"):
        scan(str(tmp_path))


def test_probe(root):
    assert probe([f"{root}/.tools/uv-0.13.9/bin", f"{root}/.python/cpython-3.12.16-linux-*/bin/python3.12"]) == {
        f"{root}/.tools/uv-0.13.9/bin": True, f"{root}/.python/cpython-3.12.16-linux-*/bin/python3.12": False}


def test_missing_root_is_empty(tmp_path):
    assert scan(str(tmp_path / "absent")) == {}
    assert facts(str(tmp_path / "absent"), {}) == {"root": str(tmp_path / "absent"), "engines": {}}


PASSED = {"version": "0.21.0", "arch_list": ["sm_70", "sm_80"],
          "binary_audit": {"ok": True, "sm": "sm_70", "summary": "12 extensions"}}


@pytest.mark.parametrize(("record", "kind", "arch", "cc", "want"), [
    (PASSED, "python", "sm_70", "7.0", True),
    (PASSED, "python", "", "", True),
    (PASSED | {"version": "0.20.0"}, "python", "sm_70", "7.0", False),  # another release in that directory
    (PASSED, "python", "sm_75", "", False),  # torch has no kernels for that GPU
    (PASSED, "python", "sm_70", "7.5", False),  # audited for another GPU
    (PASSED | {"binary_audit": {"ok": False, "sm": "sm_70"}}, "python", "sm_70", "7.0", False),
    (PASSED | {"binary_audit": {}}, "python", "sm_70", "7.0", False),  # recorded without an audit
    ({}, "python", "", "", False),  # no record
    ({"version": "b1234"}, "llamacpp", "sm_70", "7.0", True),
])
def test_record_passed(record, kind, arch, cc, want):
    assert record_passed(record, kind, record.get("version", "0.21.0") if kind == "llamacpp" else "0.21.0",
                         arch, cc) is want


KEY = {"pytorch_index_url": "https://download.pytorch.org/whl", "nccl_state": None}
AUDITED = {"name": V2, "fingerprint": "f1", "recorded": {"fingerprint": "f1", "key": KEY}}


@pytest.mark.parametrize(("audit", "key", "want"), [
    (AUDITED, KEY, True),
    (AUDITED | {"fingerprint": "f2"}, KEY, False),  # the venv changed since the audit
    (AUDITED, KEY | {"nccl_state": "audit"}, False),  # another fix-up setting
    (AUDITED | {"recorded": {}}, KEY, False),  # never recorded (an install of an older role)
    (AUDITED | {"fingerprint": None, "recorded": {"fingerprint": None, "key": KEY}}, KEY, False),  # no venv
    ({}, KEY, False),
])
def test_audit_current(audit, key, want):
    assert audit_current(audit, key) is want


SPECS = {"vllm": {"name": V2, "kind": "python", "version": "0.21.0", "download": {}},
         "llamacpp": {"name": "llamacpp-0.3.36-cpu", "kind": "llamacpp", "version": "0.3.36",
                      "download": {"sha256": "AB12"}}}


def _installs(**changes):
    engines = {"vllm": {"finished": [V2, V1], "current": V2, "records": {V2: PASSED, V1: PASSED}},
               "llamacpp": {"finished": ["llamacpp-0.3.36-cpu"], "current": "llamacpp-0.3.36-cpu",
                            "records": {"llamacpp-0.3.36-cpu": {"version": "0.3.36", "source_sha256": "ab12"}}}}
    for flavour, change in changes.items():
        engines[flavour] = engines[flavour] | change
    return {"engines": engines, "audits": {"vllm": AUDITED}}


@pytest.mark.parametrize(("installs", "key", "want"), [
    (_installs(), KEY, []),  # converged: nothing to do
    (_installs(vllm={"finished": [V1]}), KEY, ["vllm"]),  # to install
    (_installs(vllm={"current": V1}), KEY, ["vllm"]),  # installed, not in service
    (_installs(vllm={"records": {V2: PASSED | {"arch_list": []}}}), KEY, ["vllm"]),  # not smoke-tested for sm_70
    (_installs(llamacpp={"records": {"llamacpp-0.3.36-cpu": {"version": "0.3.36", "source_sha256": "cd34"}}}),
     KEY, ["llamacpp"]),  # the pin changed under the same name: flavour.yml fails with the reason
    (_installs(), KEY | {"nccl_state": "audit"}, ["vllm"]),  # fix-up settings changed
    (_installs() | {"audits": {}}, KEY, ["vllm"]),  # no audit record
])
def test_unsettled(installs, key, want):
    assert unsettled(installs, ["vllm", "llamacpp"], SPECS, key, "sm_70", "7.0") == want
