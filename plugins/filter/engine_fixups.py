# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.engine_patches_recorded and engine_fixup_summary (role volta.serving._engine_fixups)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _engine_fixups

    return _engine_fixups


def engine_patches_recorded(recorded, patches, state, audit=None):
    """Whether the install's record has every patch asked for in the wanted state and the NCCL audit (its registered
    result, or whether it changed the venv) changed nothing."""
    if not isinstance(recorded, Mapping) or not isinstance(patches, list):
        raise AnsibleFilterError(
            f"engine_patches_recorded: expected a mapping and a list, got {recorded!r}, {patches!r}")
    changed = audit.get("changed", False) if isinstance(audit, Mapping) else audit
    try:
        return _logic().patches_recorded(dict(recorded), list(patches), state, bool(changed))
    except ValueError as exc:
        raise AnsibleFilterError(f"engine_patches_recorded: {exc}") from exc


def engine_fixup_summary(audit, done):
    """The result of the fix-up of one venv from the audit's registered result and *done*: python, patches (asked
    for), patch_loop (the registered source_patch loop, {} when it did not run) and recorded (the recorded results
    when the patches were not checked again, else none)."""
    if not isinstance(audit, Mapping) or not isinstance(done, Mapping):
        raise AnsibleFilterError("engine_fixup_summary: expected the registered audit and a mapping of what was done")
    patches = list(done.get("patches") or [])
    recorded = done.get("recorded")
    if recorded is not None and (not isinstance(recorded, Mapping) or any(p not in recorded for p in patches)):
        raise AnsibleFilterError(f"engine_fixup_summary: recorded must have every patch of {patches!r}")
    return _logic().summary(dict(audit), dict(done.get("patch_loop") or {}), done.get("python", ""), patches,
                            None if recorded is None else dict(recorded))


class FilterModule:
    def filters(self):
        return {"engine_patches_recorded": engine_patches_recorded, "engine_fixup_summary": engine_fixup_summary}
