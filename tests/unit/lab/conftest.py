"""Fixtures shared by the tests of the lab's stand-ins."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HUB_DIR = Path(__file__).resolve().parents[2] / "lab" / "hub"


@pytest.fixture(scope="module")
def hub():
    """The lab's hub stand-in (tests/lab/hub/hubserver.py) on loopback, for one test module: its URL."""
    sys.path.insert(0, str(HUB_DIR))
    import hubserver  # the lab's module, found through HUB_DIR

    srv, cdn = hubserver.serve("127.0.0.1", 0, 0)
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    cdn.shutdown()
