"""Make the collection importable as ``ansible_collections.volta.serving`` for unit tests; make fast's quick subset."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS = ROOT / "collections"
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


# make fast (VOLTA_UNIT_QUICK=1) leaves out the suites that run whole ansible-playbook runs on the controller
# (the bad-input suites, preflight on the controller, the documented commands, status.yml, the payload cache's
# runs): they take most of the unit tests' time. make unit, and so make test, runs every test.
PLAYBOOK_SUITES = (
    "roles/test_bad_input_",
    "roles/test_preflight_controller.py",
    "roles/test_preflight_shapes.py",
    "docs/test_documented_commands.py",
    "playbooks/test_status.py",
    "callback/test_payload_cache.py",
)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("VOLTA_UNIT_QUICK") != "1":
        return
    unit = Path(__file__).resolve().parent
    kept, left = [], []
    for item in items:
        path = Path(item.path).resolve()
        relative = path.relative_to(unit).as_posix() if path.is_relative_to(unit) else ""
        (left if relative.startswith(PLAYBOOK_SUITES) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
