"""A cached venv with the REAL official ``openai`` Python client, at the one version the lab pins.

OPENAI_VERSION below is the only place the version is written (the README's dependency list says
why it is pinned). Built once (``python -m venv`` + ``pip install openai==<pin>`` from the configured
Python index) into ``$VOLTA_REAL_CACHE`` (default ~/.cache/volta-serving/real), never in the
checkout, beside the huggingface_hub venv of tests/lab/hub/client_venv.py. Used by bench/loadgen.py
(the load generator and its client checks) and bench/router-eval.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

OPENAI_VERSION = "3.60.0"
CACHE = Path(os.environ.get("VOLTA_REAL_CACHE") or Path.home() / ".cache" / "volta-serving" / "real")


def venv(version=OPENAI_VERSION):
    """The venv directory (built on first use, under a lock); its interpreter is venv()/bin/python."""
    path = CACHE / f"openai-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".openai.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".complete").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
            subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                            f"openai=={version}"], check=True)
            (path / ".complete").write_text(version, encoding="utf-8")
    return path


def site_packages(version=OPENAI_VERSION):
    """The venv's site-packages (same Python as the caller, so its packages import in the caller)."""
    return next((venv(version) / "lib").glob("python3*/site-packages"))
