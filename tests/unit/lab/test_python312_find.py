"""tests/lab/apt/python312: finding a CPython 3.12 for the lab's python3.12 stand-in packages."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "lab" / "apt" / "python312"


@pytest.fixture()
def py312(monkeypatch):
    loader = importlib.machinery.SourceFileLoader("lab_python312", str(SCRIPT))
    spec = importlib.util.spec_from_loader("lab_python312", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    for var in ("VOLTA_PYTHON312", "VOLTA_LAB_PYTHON312"):
        monkeypatch.delenv(var, raising=False)
    return module


def fake_python(root: Path, version="3.12", enable_shared=1, with_lib=True, with_header=True) -> Path:
    """An 'interpreter' that answers the layout probe the way CPython's sysconfig does."""
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "include" / "python3.12").mkdir(parents=True)
    if with_lib:
        (root / "lib" / "libpython3.12.so.1.0").write_bytes(b"\x7fELF")
    if with_header:
        (root / "include" / "python3.12" / "Python.h").write_text("/* header */\n")
    answer = {"version": version, "enable_shared": enable_shared, "libdir": str(root / "lib"),
              "soname": "libpython3.12.so.1.0",
              "stdlib": str(root / "lib" / "python3.12"), "include": str(root / "include" / "python3.12")}
    python = root / "bin" / "python3.12"
    python.write_text(f"#!/bin/sh\necho '{json.dumps(answer)}'\n")
    python.chmod(0o755)
    return python


def test_probe_takes_a_shared_312_with_headers(py312, tmp_path):
    found = py312.Python312.probe(fake_python(tmp_path / "ok"))
    assert found is not None
    assert found.libpython == tmp_path / "ok" / "lib" / "libpython3.12.so.1.0"
    assert found.include == tmp_path / "ok" / "include" / "python3.12"


@pytest.mark.parametrize("kwargs", [{"version": "3.11"}, {"enable_shared": 0}, {"with_lib": False},
                                    {"with_header": False}])
def test_probe_refuses_what_the_stand_in_cannot_carry(py312, tmp_path, kwargs):
    assert py312.Python312.probe(fake_python(tmp_path / "bad", **kwargs)) is None


def test_probe_refuses_this_interpreter_when_it_is_not_312(py312):
    if sys.version_info[:2] == (3, 12):
        pytest.skip("the test runs on 3.12")
    assert py312.Python312.probe(Path(sys.executable)) is None


def test_the_environment_variable_comes_first_and_may_name_a_prefix(py312, tmp_path, monkeypatch):
    fake_python(tmp_path / "mine")
    monkeypatch.setenv("VOLTA_PYTHON312", str(tmp_path / "mine"))
    first = py312.candidates()[0]
    assert first == ("VOLTA_PYTHON312", tmp_path / "mine" / "bin" / "python3.12")
    assert py312.find_python().python == tmp_path / "mine" / "bin" / "python3.12"


def test_nothing_usable_names_what_was_tried_and_the_fix(py312, tmp_path, monkeypatch):
    bad = fake_python(tmp_path / "old", version="3.11")
    monkeypatch.setattr(py312, "candidates", lambda: [("VOLTA_PYTHON312", bad)])
    monkeypatch.setattr(py312, "_uv", lambda: None)
    with pytest.raises(py312.Fail) as err:
        py312.find_python()
    msg = str(err.value)
    assert "needs a CPython 3.12 with a shared libpython" in msg
    assert f"Tried: {bad} (VOLTA_PYTHON312)" in msg
    assert "Fix: set VOLTA_PYTHON312=" in msg and "uv python install 3.12" in msg


def test_a_failed_uv_install_is_reported_with_its_last_line(py312, tmp_path, monkeypatch):
    uv = tmp_path / "uv"
    uv.write_text("#!/bin/sh\necho 'error: failed to download cpython-3.12' >&2\nexit 2\n")
    uv.chmod(0o755)
    monkeypatch.setattr(py312, "candidates", lambda: [])
    monkeypatch.setattr(py312, "_uv", lambda: uv)
    with pytest.raises(py312.Fail) as err:
        py312.find_python()
    assert "uv python install 3.12 (exit 2: error: failed to download cpython-3.12)" in str(err.value)


def test_uv_comes_out_of_the_cached_wheel_when_not_on_path(py312, tmp_path, monkeypatch):
    lab = tmp_path / "lab"
    (lab / ".build" / "cache").mkdir(parents=True)
    with zipfile.ZipFile(lab / ".build" / "cache" / "uv-0.13.9-py3-none-any.whl", "w") as zf:
        zf.writestr("uv-0.13.9.data/scripts/uv", "#!/bin/sh\necho uv\n")
    monkeypatch.setattr(py312, "LAB", lab)
    monkeypatch.setattr(py312.shutil, "which", lambda name: None)
    tool = py312._uv()
    assert tool == lab / ".build" / "tools" / "uv"
    assert tool.read_text() == "#!/bin/sh\necho uv\n" and tool.stat().st_mode & 0o111
