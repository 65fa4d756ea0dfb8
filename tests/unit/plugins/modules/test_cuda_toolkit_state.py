# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for volta.serving.cuda_toolkit_state: main() with a stand-in toolkit, dpkg-query,
update-alternatives and interpreter."""

from __future__ import annotations

import json
import os
import stat

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import cuda_toolkit_state

STUBS = {
    "dpkg-query": 'echo -n "12.8.1-1"\n',
    "update-alternatives": '[ "$2" = cuda ] && { echo "Name: cuda"; echo "Value: /usr/local/cuda-12.6"; exit 0; }\n'
                           'echo "update-alternatives: error: no alternatives for $2" >&2; exit 2\n',
    "python3.11": 'echo "$INCLUDE_DIR"\n',
}


@pytest.fixture
def toolkit(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, body in STUBS.items():
        (bindir / name).write_text("#!/bin/sh\n" + body)
        (bindir / name).chmod(stat.S_IRWXU)
    home = tmp_path / "cuda-12.8"
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin/nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.0'\n")
    nvcc.chmod(stat.S_IRWXU)
    include = tmp_path / "include"
    include.mkdir()
    monkeypatch.setenv("INCLUDE_DIR", str(include))
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return home, include


def run(capsys, home, **over):
    args = {"home": str(home), "version": "12.8", "package": "cuda-toolkit-12-8", "alternatives": ["cuda", "cuda-12"],
            "python": "python3.11", "dev_package": "python3.11-dev", **over}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_toolkit_state.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_reads_everything_in_one_call(toolkit, capsys):
    home, include = toolkit
    rc, out = run(capsys, home)
    assert rc == 0 and out["changed"] is False
    assert out["nvcc"] == {"exists": True, "release": "12.8", "error": ""}
    assert out["package_version"] == "12.8.1-1"
    assert out["alternatives"] == {"cuda": "/usr/local/cuda-12.6", "cuda-12": None}
    assert out["python_include"] == str(include) and out["python_h"] is False
    assert f"Python.h of python3.11 is missing ({include}/Python.h; ): install python3.11-dev" in out["problems"]


def test_python_h_present_and_a_pin_that_differs(toolkit, capsys):
    home, include = toolkit
    (include / "Python.h").write_text("")
    _rc, out = run(capsys, home, package_version="12.8.0-1")
    assert out["python_h"] is True
    assert "cuda-toolkit-12-8 is 12.8.1-1, not 12.8.0-1" in out["problems"]


def test_a_missing_toolkit_and_interpreter(toolkit, capsys, tmp_path):
    _rc, out = run(capsys, tmp_path / "nowhere", python="python3.99")
    assert out["nvcc"]["exists"] is False and out["nvcc"]["release"] == "none"
    assert out["python_error"] == "python3.99 is not installed" and out["python_h"] is False
