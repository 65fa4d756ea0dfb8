# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.engine_installs module: main() end to end, through exit_json."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import engine_installs

MARKER = ".volta-install.json"
OLD, NEW = "vllm-0.20.0-torch2.11.0-cu126", "vllm-0.21.0-torch2.11.0-cu126"


def run_module(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        engine_installs.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def root(tmp_path):
    for mtime, name in enumerate([OLD, NEW], start=1):
        (tmp_path / "vllm" / name).mkdir(parents=True)
        (tmp_path / "vllm" / name / MARKER).write_text(json.dumps({"name": name, "flavour": "vllm"}))
        os.utime(tmp_path / "vllm" / name / MARKER, (mtime, mtime))
    (tmp_path / "vllm" / "vllm-0.22.0-torch2.11.0-cu126").mkdir()
    (tmp_path / "vllm" / "current").symlink_to(NEW)
    return tmp_path


def args(root, **more):
    return {"root": str(root), "installing": {"vllm": NEW}, "keep": 1,
            "facts_path": str(root / "facts.d" / "volta_engines.fact")} | more


def test_read_changes_nothing_and_reports_the_plan(root, capsys):
    rc, out = run_module(capsys, args(root))
    assert rc == 0 and out["changed"] is False
    assert out["prune"] == [str(root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126")]
    assert out["facts_changed"] is True
    assert out["engines"]["vllm"]["current"] == NEW and out["engines"]["vllm"]["previous"] == OLD
    assert out["volta_engines"]["engines"]["vllm"]["installs"] == [NEW, OLD]
    assert (root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126").is_dir()
    assert not (root / "facts.d").exists()


def test_check_mode_predicts_and_diff_shows(root, capsys):
    rc, out = run_module(capsys, args(root, state="present", _ansible_check_mode=True, _ansible_diff=True))
    assert rc == 0 and out["changed"] is True
    assert out["diff"][0]["before"] == f"{root}/vllm/vllm-0.22.0-torch2.11.0-cu126\n"
    assert '"current": "' + NEW in out["diff"][1]["after"]
    assert (root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126").is_dir()
    assert not (root / "facts.d").exists()


def test_present_prunes_writes_then_is_idempotent(root, capsys):
    rc, out = run_module(capsys, args(root, state="present"))
    assert rc == 0 and out["changed"] is True
    assert not (root / "vllm" / "vllm-0.22.0-torch2.11.0-cu126").exists()
    fact_file = root / "facts.d" / "volta_engines.fact"
    assert json.loads(fact_file.read_text()) == out["volta_engines"]
    assert oct(fact_file.stat().st_mode & 0o777) == "0o644"
    rc, again = run_module(capsys, args(root, state="present"))
    assert rc == 0 and again["changed"] is False and again["facts_changed"] is False and again["prune"] == []


def test_bad_record_fails_with_the_fix(root, capsys):
    (root / "vllm" / OLD / MARKER).write_text("[]")
    rc, out = run_module(capsys, args(root))
    assert rc == 1
    assert f"{root}/vllm/{OLD}/{MARKER} is not a JSON object; remove {root}/vllm/{OLD}" in out["msg"]


def test_packages_missing_reads_dpkg_only_when_asked(root, capsys, monkeypatch):
    asked = []

    def rows(module):
        asked.append(module)
        return ["ninja-build 1.11.1-2 install installed ninja-build", "cmake 3.25.1-1 install unpacked cmake"]

    monkeypatch.setattr(engine_installs, "dpkg_rows", rows)
    rc, out = run_module(capsys, args(root))
    assert rc == 0 and out["packages_missing"] == [] and asked == []
    rc, out = run_module(capsys, args(root, packages=["ninja-build", "cmake", "python3-venv"]))
    assert rc == 0 and out["changed"] is False
    assert out["packages_missing"] == ["cmake", "python3-venv"] and len(asked) == 1


def test_audits_only_when_asked_with_the_venv_digest_and_the_record(root, capsys):
    rc, out = run_module(capsys, args(root))
    assert rc == 0 and "audits" not in out

    site = root / "vllm" / NEW / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    rc, out = run_module(capsys, args(root, audit_record=".volta-audit.json"))
    # A finished install without a record or a distribution: nothing to compare with.
    assert rc == 0 and out["audits"] == {"vllm": {"name": NEW, "fingerprint": None, "recorded": {}}}

    (site / "torch-2.11.0+cu126.dist-info").mkdir()
    (root / "vllm" / NEW / ".volta-audit.json").write_text(json.dumps({"fingerprint": "old", "key": {"a": 1}}))
    rc, out = run_module(capsys, args(root, audit_record=".volta-audit.json"))
    first = out["audits"]["vllm"]["fingerprint"]
    assert rc == 0 and len(first) == 64
    assert out["audits"]["vllm"]["recorded"] == {"fingerprint": "old", "key": {"a": 1}}

    # pip installing into the venv changes the digest; an unreadable record reads as none.
    (site / "nvidia_nccl_cu13-2.28.9.dist-info").mkdir()
    (root / "vllm" / NEW / ".volta-audit.json").write_text("{not json")
    rc, out = run_module(capsys, args(root, audit_record=".volta-audit.json"))
    assert rc == 0 and out["audits"]["vllm"]["fingerprint"] not in (None, first)
    assert out["audits"]["vllm"]["recorded"] == {}

    # An install still to be made (not finished) has no audit to compare.
    rc, out = run_module(capsys, args(root, audit_record=".volta-audit.json",
                                      installing={"vllm": "vllm-0.22.0-torch2.11.0-cu126"}))
    assert rc == 0 and out["audits"] == {}
