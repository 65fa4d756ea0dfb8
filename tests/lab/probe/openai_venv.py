"""A cached venv with the REAL official ``openai`` Python client, at the one version the lab pins.

OPENAI_VERSION below is the only place the version is written (the README's dependency list says
why it is pinned). Built once (``python -m venv`` + ``pip install openai==<pin>`` from the configured
Python index) into ``$VOLTA_REAL_CACHE`` (default ~/.cache/volta-serving/real), never in the
checkout, beside the huggingface_hub venv of tests/lab/hub/client_venv.py. Used by bench/loadgen.py
(the load generator and its client checks) and bench/router-eval.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The cached-venv builder of the huggingface_hub client (tests/lab/hub is not a package).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hub"))
import client_venv

OPENAI_VERSION = "3.60.0"


def venv(version=OPENAI_VERSION):
    """The venv directory (built on first use, under a lock); its interpreter is venv()/bin/python."""
    return client_venv.pinned_venv("openai", version)


def site_packages(version=OPENAI_VERSION):
    """The venv's site-packages (same Python as the caller, so its packages import in the caller)."""
    return next((venv(version) / "lib").glob("python3*/site-packages"))
