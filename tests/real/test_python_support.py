# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Python and glibc data of plugin_utils/_python.py against the real releases on the Python index.

- REQUIRES_PYTHON: the Requires-Python of vLLM 0.21.0 and torch 2.10.0/2.11.0, read from their PEP 658
  metadata the way the engine role reads it (volta.serving.dist_metadata), and from the vLLM 0.21.0 wheel;
- the glibc floors of the vLLM and torch wheels (their manylinux tags) are below every platform's glibc,
  which is why only 1Cat-vLLM (a plain linux_x86_64 wheel) has an ENGINE_GLIBC entry;
- DEFAULT_UV_PYTHON is a CPython the pinned uv (engine_uv_version) can install.
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.module_utils import _index
from ansible_collections.volta.serving.plugins.module_utils._pyreq import specifier_contains
from ansible_collections.volta.serving.plugins.plugin_utils import _python
from artifacts import fetch, index_url, member, unavailable

ROOT = Path(__file__).resolve().parents[2]
_MANYLINUX_RE = re.compile(r"manylinux_(\d+)_(\d+)_x86_64")


def _metadata(name, version):
    try:
        return _index.from_index(index_url(), name, version, 60)
    except _index.MetadataError as exc:
        unavailable(f"{name} {version}: {exc}")
        raise


@pytest.mark.parametrize(("project", "versions"), [("vllm", ["0.21.0"]), ("torch", ["2.10.0", "2.11.0"])])
def test_recorded_requires_python_is_the_releases(project, versions):
    for version in versions:
        assert _python.REQUIRES_PYTHON[project][version] == _metadata(project, version)["requires_python"]


def test_vllm_wheel_metadata_says_the_same():
    meta = member(fetch("vllm", "0.21.0"), ".dist-info/METADATA").decode("utf-8", "replace")
    assert re.search(r"^Requires-Python: (.+)$", meta, re.M).group(1) == _python.REQUIRES_PYTHON["vllm"]["0.21.0"]


def test_every_supported_platform_python_runs_the_pinned_vllm():
    requires, _why = _python.engine_requires("vllm", "0.21.0", "2.11.0")
    for platform, python in _python.DISTRIBUTION_PYTHON.items():
        assert specifier_contains(requires, python), platform


@pytest.mark.parametrize(("project", "version"), [("vllm", "0.21.0"), ("torch", "2.11.0"), ("torch", "2.10.0")])
def test_vllm_and_torch_wheels_need_no_newer_glibc_than_any_platform_has(project, version):
    page = _index.project_page_url(index_url(), project)
    try:
        html = _index.read_url(page, 60, accept="text/html").decode("utf-8", "replace")
    except _index.MetadataError as exc:
        unavailable(f"{page}: {exc}")
    wheels, _sdists = _index.release_files(_index.parse_project_page(html, page), project, version)
    floors = {tuple(int(p) for p in m.groups()) for w in wheels if (m := _MANYLINUX_RE.search(w["filename"]))}
    assert floors, f"{project} {version}: no manylinux x86_64 wheel"
    oldest = min(tuple(int(p) for p in g.split(".")) for g in _python.DISTRIBUTION_GLIBC.values())
    assert max(floors) <= oldest, (project, version, floors)  # vllm: 2.24, torch: 2.28; Ubuntu 22.04 has 2.35


def test_the_pinned_uv_can_install_the_pinned_cpython(tmp_path):
    defaults = yaml.safe_load((ROOT / "roles" / "engine" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert defaults["engine_python_uv_version"] == _python.DEFAULT_UV_PYTHON
    wheel = fetch("uv", defaults["engine_uv_version"])
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith("/scripts/uv")]
        uv = Path(zf.extract(name, tmp_path))
    uv.chmod(0o755)
    listed = subprocess.run([str(uv), "python", "list", "--only-downloads", "--all-versions"],
                            capture_output=True, text=True, check=True, timeout=120,
                            env={"UV_NO_CONFIG": "1", "UV_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    assert f"cpython-{_python.DEFAULT_UV_PYTHON}-linux-x86_64-gnu" in listed.stdout
    # Every Python engine's recorded range takes it (1Cat-vLLM: its cp312 wheel).
    for engine, version, torch in (("vllm", "0.21.0", "2.11.0"), ("onecat", "1.5.1", "2.10.0")):
        requires, _why = _python.engine_requires(engine, version, torch)
        assert specifier_contains(requires, _python.DEFAULT_UV_PYTHON), engine
