"""Make the collection importable as ``ansible_collections.volta.serving`` for unit tests."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
