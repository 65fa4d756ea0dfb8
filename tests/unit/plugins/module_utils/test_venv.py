# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_venv.fingerprint: what changes the digest of a venv's installed distributions, and what does not."""

from __future__ import annotations

import os
import shutil

from ansible_collections.volta.serving.plugins.module_utils._venv import fingerprint, venv_of


def _site(venv):
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    return site


def _dist(site, name, mtime):
    path = site / f"{name}.dist-info"
    path.mkdir()
    (path / "METADATA").write_text(f"Name: {name}\n")
    os.utime(path, ns=(mtime, mtime))
    return path


def test_no_site_packages_or_no_distribution_is_none(tmp_path):
    assert fingerprint(str(tmp_path / "venv")) is None
    _site(tmp_path / "venv")
    assert fingerprint(str(tmp_path / "venv")) is None


def test_an_installed_upgraded_or_reinstalled_distribution_changes_it(tmp_path):
    venv = tmp_path / "venv"
    site = _site(venv)
    _dist(site, "torch-2.11.0+cu126", 1_000)
    first = fingerprint(str(venv))
    assert first is not None and len(first) == 64
    assert fingerprint(str(venv)) == first

    added = _dist(site, "nvidia_nccl_cu13-2.28.9", 2_000)
    second = fingerprint(str(venv))
    assert second != first
    shutil.rmtree(added)
    assert fingerprint(str(venv)) == first

    # The same name written again (a reinstall): a new modification time.
    shutil.rmtree(site / "torch-2.11.0+cu126.dist-info")
    _dist(site, "torch-2.11.0+cu126", 3_000)
    assert fingerprint(str(venv)) not in (first, second)


def test_running_the_venv_does_not_change_it(tmp_path):
    venv = tmp_path / "venv"
    site = _site(venv)
    _dist(site, "vllm-0.21.0", 1_000)
    before = fingerprint(str(venv))
    (site / "vllm").mkdir()
    (site / "vllm" / "__pycache__").mkdir()
    (site / "vllm" / "__pycache__" / "envs.cpython-312.pyc").write_bytes(b"\0")
    (site / "vllm" / "fused_moe.py").write_text("# patched\n")
    (site / "__pycache__").mkdir()
    assert fingerprint(str(venv)) == before


def test_venv_of_an_interpreter():
    assert venv_of("/opt/volta/engines/vllm/current/venv/bin/python") == "/opt/volta/engines/vllm/current/venv"
