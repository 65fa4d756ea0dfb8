"""A cached venv with the REAL huggingface_hub client, at the version the role volta.serving.model pins.

Built once (``python -m venv`` + ``pip install huggingface_hub==<pin>`` from the configured Python
index) into ``$VOLTA_REAL_CACHE`` (default ~/.cache/volta-serving/real), never in the checkout.
Used by the tests that drive the real client against the lab hub (tests/unit/lab/test_hub.py,
tests/unit/plugins/modules/test_model_fetch.py).
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]
CACHE = Path(os.environ.get("VOLTA_REAL_CACHE") or Path.home() / ".cache" / "volta-serving" / "real")


def pinned_version():
    """model_huggingface_hub_version of roles/model/defaults/main.yml: the lab tests the version the role installs."""
    text = (TOP / "roles" / "model" / "defaults" / "main.yml").read_text(encoding="utf-8")
    return re.search(r'^model_huggingface_hub_version: "([^"]+)"', text, re.M).group(1)


def pinned_venv(project, version):
    """A venv holding project==version from the Python index, built once under a lock into CACHE.

    Its directory is ``<project>-<version>-py<major><minor>`` (the caller's Python: its packages import
    in the caller). Also used by tests/lab/probe/openai_venv.py.
    """
    path = CACHE / f"{project}-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{project}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".complete").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
            subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            f"{project}=={version}"], check=True)
            (path / ".complete").write_text(version, encoding="utf-8")
    return path


def venv(version=None):
    """The venv directory (built on first use); its interpreter is venv()/bin/python."""
    return pinned_venv("huggingface_hub", version or pinned_version())


def site_packages(version=None):
    """The venv's site-packages (same Python as the caller, so its packages import in the caller)."""
    return next((venv(version) / "lib").glob("python3*/site-packages"))
