# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.engine_record_passed, engine_audit_current and engine_unsettled (role volta.serving.engine)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.module_utils import _engine_installs

    return _engine_installs


def engine_record_passed(record, spec, cuda_arch="", compute_capability=""):
    """Whether a finished install's record shows a passed smoke test for this version and GPU."""
    if not isinstance(spec, dict) or "kind" not in spec or "version" not in spec:
        raise AnsibleFilterError(f"engine_record_passed: spec must have kind and version, got {spec!r}")
    return _logic().record_passed(record, spec["kind"], spec["version"], cuda_arch or "", compute_capability or "")


def engine_audit_current(audit, key):
    """Whether an install's NCCL audit record matches its venv now and the fix-up settings *key*."""
    if not isinstance(audit, dict):
        raise AnsibleFilterError(f"engine_audit_current: expected an entry of engine_installs' audits, got {audit!r}")
    return _logic().audit_current(audit, key)


def engine_unsettled(installs, flavours, specs, key, cuda_arch="", compute_capability=""):
    """The flavours whose wanted install the engine role has something to do for."""
    if not isinstance(installs, dict) or "engines" not in installs:
        raise AnsibleFilterError("engine_unsettled: expected the result of volta.serving.engine_installs")
    missing = [flavour for flavour in flavours if not isinstance(specs.get(flavour), dict)
               or not {"name", "kind", "version"} <= set(specs[flavour])]
    if missing:
        raise AnsibleFilterError(f"engine_unsettled: no spec with name, kind and version for {', '.join(missing)}")
    return _logic().unsettled(installs, list(flavours), specs, key, cuda_arch or "", compute_capability or "")


class FilterModule:
    def filters(self):
        return {"engine_record_passed": engine_record_passed, "engine_audit_current": engine_audit_current,
                "engine_unsettled": engine_unsettled}
