"""The real-artifact tier: tests against real releases from the Python index (see README.md).

``tests/real/run`` probes the index first; when it cannot be reached it says so in one line and
sets ``VOLTA_REAL_OFFLINE=1``, and every test that needs a download is skipped
(``artifacts.unavailable``). Online, a download that fails is a test failure, never a skip.
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for path in (HERE, ROOT / "collections"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
