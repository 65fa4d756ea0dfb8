# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.cuda_binary_audit end to end: main() on a fake venv with real ELF extensions.

The fake ``python`` answers the site-packages probe; the extensions are built with gcc from the
fat binary tests/lab/fatbin.py writes, linked against stubs with the CUDA libraries' sonames.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import cuda_binary_audit

REPO = Path(__file__).resolve().parents[4]
_SPEC = importlib.util.spec_from_file_location("lab_fatbin", REPO / "tests" / "lab" / "fatbin.py")
fb = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(fb)
GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed: no ELF extensions can be built")
TORCH_VERSION_PY = "__version__ = '2.11.0+cu126'\ndebug = False\ncuda: Optional[str] = '12.6'\n"
MESSAGE_13 = ("vllm/_C.abi3.so needs libcudart.so.13 but torch 2.11.0+cu126 brings CUDA 12, and has no code for "
              "sm_70 (lowest sm_75)")


def _so(out, rel, containers, soname, stubs):
    target = out / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    src = target.with_suffix(".c")
    src.write_text(fb.c_source(fb.section(containers)))
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(target), str(src), f"-L{stubs}", "-Wl,--no-as-needed",
                    f"-l:{soname}"], check=True)


@pytest.fixture
def venv(tmp_path):
    """A venv whose vllm/_C.abi3.so is built for (sass, cuda major); returns its python."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "stub.c").write_text("int volta_stub(void) { return 0; }\n")
    for soname in ("libcudart.so.12", "libcudart.so.13"):
        subprocess.run([GCC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(stubs / soname),
                        str(stubs / "stub.c")], check=True)

    def make(sass=(70, 75), cuda=12):
        site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
        (site / "torch").mkdir(parents=True, exist_ok=True)
        (site / "torch" / "version.py").write_text(TORCH_VERSION_PY)
        _so(site, "vllm/_C.abi3.so", [(sass, ())], f"libcudart.so.{cuda}", stubs)
        python = tmp_path / "venv" / "bin" / "python"
        python.parent.mkdir(parents=True, exist_ok=True)
        python.write_text(f"#!/bin/sh\necho '{json.dumps([str(site)])}'\n")
        python.chmod(0o755)
        make.site = str(site)
        return str(python)

    return make


def run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        cuda_binary_audit.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_fine_venv(capsys, venv):
    rc, result = run(capsys, {"python": venv(), "compute_capability": "7.0"})
    assert rc == 0 and result["ok"] is True and result["changed"] is False
    assert result["torch_cuda"] == "12.6" and result["torch_version"] == "2.11.0+cu126" and result["sm"] == "sm_70"
    assert result["files"] == {"checked": 1, "cuda": 1, "problem": []} and result["problems"] == []
    assert result["summary"] == "ok: 1 shared objects, 1 with CUDA, checked against sm_70 and torch 2.11.0+cu126"


def test_cuda13_extension_fails_with_the_message(capsys, venv):
    rc, result = run(capsys, {"python": venv(sass=(75, 80), cuda=13), "compute_capability": "7.0"})
    assert rc == 1 and result["failed"] is True and result["ok"] is False
    assert result["msg"] == ("1 problem: 1 shared objects, 1 with CUDA, checked against sm_70 and torch 2.11.0+cu126: "
                             + MESSAGE_13)
    assert result["problems"] == [MESSAGE_13] and result["files"]["problem"][0]["path"] == "vllm/_C.abi3.so"


@pytest.mark.parametrize("extra", [{"fail_on_problems": False},
                                   {"fail_on_problems": False, "_ansible_check_mode": True}])
def test_report_only_and_check_mode(capsys, venv, extra):
    rc, result = run(capsys, {"python": venv(sass=(75,)), "compute_capability": "7.0", **extra})
    assert rc == 0 and result["ok"] is False and result["changed"] is False
    assert result["problems"] == ["vllm/_C.abi3.so has no code for sm_70 (lowest sm_75)"]


def test_site_packages_and_torch_cuda_options(capsys, venv):
    venv(cuda=12)
    rc, result = run(capsys, {"site_packages": [venv.site], "compute_capability": "7.0", "torch_cuda": "13.0",
                              "fail_on_problems": False})
    assert rc == 0 and result["torch_cuda"] == "13.0"
    assert result["problems"] == ["vllm/_C.abi3.so needs libcudart.so.12 but torch 2.11.0+cu126 brings CUDA 13"]


def test_include_limits_the_files(capsys, venv):
    rc, result = run(capsys, {"python": venv(sass=(75,)), "compute_capability": "7.0", "include": ["torch/*"]})
    assert rc == 0 and result["ok"] is True and result["files"]["checked"] == 0


@pytest.mark.parametrize("args, message", [
    ({"compute_capability": "7"}, "compute capability '7' is not MAJOR.MINOR (for example 7.0)"),
    ({"compute_capability": "7.0", "torch_cuda": "cu126"}, "torch CUDA version 'cu126' does not start with a number"),
])
def test_bad_options(capsys, venv, args, message):
    rc, result = run(capsys, {"python": venv(), **args})
    assert rc == 1 and result["msg"] == message


def test_not_an_interpreter(capsys, tmp_path):
    rc, result = run(capsys, {"python": str(tmp_path / "nope"), "compute_capability": "7.0"})
    assert rc == 1 and result["msg"] == f"{tmp_path / 'nope'} is not an executable interpreter"


def test_interpreter_without_answer(capsys, tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'not json'\n")
    python.chmod(0o755)
    rc, result = run(capsys, {"python": str(python), "compute_capability": "7.0"})
    assert rc == 1 and result["msg"] == f"{python} printed no site-packages list: 'not json\\n'"
