# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter volta.serving.engine_record_passed (role volta.serving.engine)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (README, Benchmarks: fifth step).
def _logic():
    from ansible_collections.volta.serving.plugins.module_utils import _engine_installs

    return _engine_installs


def engine_record_passed(record, spec, cuda_arch="", compute_capability=""):
    """Whether a finished install's record shows a passed smoke test for this version and GPU."""
    if not isinstance(spec, dict) or "kind" not in spec or "version" not in spec:
        raise AnsibleFilterError(f"engine_record_passed: spec must have kind and version, got {spec!r}")
    return _logic().record_passed(record, spec["kind"], spec["version"], cuda_arch or "", compute_capability or "")


class FilterModule:
    def filters(self):
        return {"engine_record_passed": engine_record_passed}
