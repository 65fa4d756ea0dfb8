# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.pip_cuda_audit end to end: main() against a fake venv interpreter and a fake uv.

The fake ``python`` answers the probe with a JSON state file; the fake ``uv`` edits that file the
way ``uv pip uninstall/install`` would, and logs its argv.
"""

from __future__ import annotations

import json
import sys

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import pip_cuda_audit

ENV = {"os_name": "posix", "sys_platform": "linux", "platform_machine": "x86_64", "platform_system": "Linux",
       "platform_python_implementation": "CPython", "platform_release": "6", "platform_version": "1",
       "python_version": "3.11", "python_full_version": "3.11.2", "implementation_name": "cpython",
       "implementation_version": "3.11.2"}
PINS = {"nvidia-nccl-cu12": "2.27.5", "nvidia-cublas-cu12": "12.6.4.1", "nvidia-cudnn-cu12": "9.10.2.21"}

FAKE_PYTHON = """#!/bin/sh
cat "$(dirname "$0")/state.json"
"""
FAKE_UV = f"""#!{sys.executable}
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
state_path = os.path.join(here, "state.json")
with open(os.path.join(here, "uv.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
state = json.load(open(state_path))
args = sys.argv[1:]
if os.environ.get("FAKE_UV_BREAK") and args[1] == "install":
    args = args + ["nvidia-nccl-cu13==2.28.9"]
site = os.path.join(os.path.dirname(here), "lib", "python3.11", "site-packages")
os.makedirs(site, exist_ok=True)
if args[1] == "uninstall":
    drop = set(args[4:])
    state["distributions"] = [d for d in state["distributions"] if d["name"] not in drop]
    for name in os.listdir(site):
        if name.removesuffix(".dist-info").rsplit("-", 1)[0] in drop:
            os.rmdir(os.path.join(site, name))
elif args[1] == "install":
    for req in args[6:]:
        name, _, version = req.partition("==")
        state["distributions"].append({{"name": name, "version": version, "requires": [], "files_known": True,
                                       "cuda_files": True}})
        os.makedirs(os.path.join(site, name + "-" + version + ".dist-info"))
json.dump(state, open(state_path, "w"))
"""


def dist(name, version, requires=()):
    return {"name": name, "version": version, "requires": list(requires), "files_known": True,
            "cuda_files": name.startswith("nvidia-")}


@pytest.fixture
def venv(tmp_path):
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    python, uv = bindir / "python", bindir / "uv"
    python.write_text(FAKE_PYTHON)
    uv.write_text(FAKE_UV)
    python.chmod(0o755)
    uv.chmod(0o755)

    def seed(extra=()):
        torch = dist("torch", "2.11.0+cu126", [f'{n}=={v}; platform_system == "Linux"' for n, v in PINS.items()])
        dists = [torch] + [dist(n, v) for n, v in PINS.items()] + [dist(n, v) for n, v in extra]
        (bindir / "state.json").write_text(json.dumps({"env": ENV, "distributions": dists}))
        return str(python)

    seed.bindir = bindir
    return seed


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        pip_cuda_audit.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def names(bindir):
    return sorted(d["name"] for d in json.loads((bindir / "state.json").read_text())["distributions"])


def test_audit_consistent(capsys, venv):
    rc, result = run(capsys, {"python": venv()})
    assert rc == 0 and result["consistent"] is True and result["changed"] is False
    assert result["installed"] == PINS


def test_audit_reports_and_changes_nothing(capsys, venv):
    rc, result = run(capsys, {"python": venv([("nvidia-nccl-cu13", "2.28.9")])})
    assert rc == 0 and result["changed"] is False and result["consistent"] is False
    assert sorted(f["kind"] for f in result["findings"]) == ["duplicate_nccl", "mixed_cuda_suffix", "unwanted"]
    assert not (venv.bindir / "uv.log").exists()


def test_clean_check_mode_predicts_and_changes_nothing(capsys, venv):
    python = venv([("nvidia-nccl-cu13", "2.28.9")])
    rc, result = run(capsys, {"python": python, "state": "clean", "torch_index_url": "http://lab/cu126/",
                              "_ansible_check_mode": True, "_ansible_diff": True})
    assert rc == 0 and result["changed"] is True
    assert "nvidia-nccl-cu13==2.28.9" in result["diff"]["before"]
    assert "nvidia-nccl-cu13" not in result["diff"]["after"]
    assert result["uninstalled"] == sorted([*PINS, "nvidia-nccl-cu13"])
    assert not (venv.bindir / "uv.log").exists()
    assert "nvidia-nccl-cu13" in names(venv.bindir)


def test_clean_fixes_and_reaudits(capsys, venv):
    python = venv([("nvidia-nccl-cu13", "2.28.9")])
    rc, result = run(capsys, {"python": python, "state": "clean", "torch_index_url": "http://lab/cu126/"})
    assert rc == 0 and result["changed"] is True and result["consistent"] is True
    assert result["findings"] == [] and len(result["initial_findings"]) == 3
    log = [json.loads(line) for line in (venv.bindir / "uv.log").read_text().splitlines()]
    assert log[0][:2] == ["pip", "uninstall"] and "nvidia-nccl-cu13" in log[0]
    assert log[1][:6] == ["pip", "install", "--python", python, "--index-url", "http://lab/cu126/"]
    assert sorted(log[1][6:]) == sorted(f"{n}=={v}" for n, v in PINS.items())
    assert "nvidia-nccl-cu13" not in names(venv.bindir)


def test_clean_on_consistent_venv_is_a_no_op(capsys, venv):
    rc, result = run(capsys, {"python": venv(), "state": "clean", "torch_index_url": "http://lab/cu126/"})
    assert rc == 0 and result["changed"] is False
    assert not (venv.bindir / "uv.log").exists()


def test_clean_that_does_not_fix_fails(capsys, venv, monkeypatch):
    monkeypatch.setenv("FAKE_UV_BREAK", "1")
    rc, result = run(capsys, {"python": venv([("nvidia-nccl-cu13", "2.28.9")]), "state": "clean",
                              "torch_index_url": "http://lab/cu126/"})
    assert rc == 1 and result["failed"] is True
    assert result["msg"].startswith("the venv is still inconsistent after the clean")


def test_clean_needs_an_index(capsys, venv):
    rc, result = run(capsys, {"python": venv(), "state": "clean"})
    assert rc == 1 and "torch_index_url" in result["msg"]


def test_not_an_interpreter(capsys, tmp_path):
    rc, result = run(capsys, {"python": str(tmp_path / "nope")})
    assert rc == 1 and "not an executable interpreter" in result["msg"]


def test_a_system_python_is_refused_naming_why(capsys, venv):
    python = venv()
    state = json.loads((venv.bindir / "state.json").read_text())
    state.update(python="/usr/bin/python3", prefix="/usr", base_prefix="/usr")
    (venv.bindir / "state.json").write_text(json.dumps(state))
    rc, result = run(capsys, {"python": python, "state": "clean", "torch_index_url": "http://lab/cu126/"})
    assert rc == 1
    assert result["msg"] == (
        f"{python}: /usr/bin/python3 is not a venv's interpreter (its prefix is the installation's own, /usr): "
        "the audit reads and the clean changes one engine venv only, never a system Python. "
        "Point python at <venv>/bin/python")
    assert not (venv.bindir / "uv.log").exists()


@pytest.mark.parametrize(("script", "reason"), [
    ("#!/bin/sh\nexit 3\n", "(rc=3): it printed nothing"),
    ("#!/bin/sh\nkill -9 $$\n", "(rc=-9): killed by signal 9"),
    ("#!/bin/sh\necho 'No module named encodings' >&2\nexit 1\n", "(rc=1): No module named encodings"),
])
def test_an_interpreter_that_fails_says_why(capsys, tmp_path, script, reason):
    python = tmp_path / "python"
    python.write_text(script)
    python.chmod(0o755)
    rc, result = run(capsys, {"python": str(python)})
    assert rc == 1
    assert result["msg"] == f"{python} could not read its own metadata {reason}"


def test_the_venv_digest_is_returned_and_follows_what_is_installed(capsys, venv):
    python = venv([("nvidia-nccl-cu13", "2.28.9")])
    rc, audited = run(capsys, {"python": python})
    # The fake venv has no site-packages yet: nothing installed to digest.
    assert rc == 0 and audited["fingerprint"] is None
    site = venv.bindir.parent / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for name, version in [*PINS.items(), ("nvidia-nccl-cu13", "2.28.9")]:
        (site / f"{name}-{version}.dist-info").mkdir()
    rc, audited = run(capsys, {"python": python})
    assert rc == 0 and len(audited["fingerprint"]) == 64

    rc, cleaned = run(capsys, {"python": python, "state": "clean", "torch_index_url": "http://lab/cu126/"})
    assert rc == 0 and cleaned["changed"] is True and cleaned["fingerprint"] not in (None, audited["fingerprint"])
    rc, again = run(capsys, {"python": python})
    assert rc == 0 and again["consistent"] is True and again["fingerprint"] == cleaned["fingerprint"]
