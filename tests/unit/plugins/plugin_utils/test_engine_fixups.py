# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_engine_fixups: whether the recorded patch results spare the patch check, and the fix-up's result."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter import engine_fixups as filters
from ansible_collections.volta.serving.plugins.plugin_utils import _engine_fixups

BOTH = ["fused_moe_int64_offsets", "fused_moe_sm70_block_k"]


@pytest.mark.parametrize(("recorded", "state", "audit_changed", "expected"), [
    # Every patch recorded in a result that is the wanted state: not checked again.
    ({"fused_moe_int64_offsets": "fixed_upstream", "fused_moe_sm70_block_k": "applied"}, "present", False, True),
    ({"fused_moe_int64_offsets": "not_needed", "fused_moe_sm70_block_k": "absent"}, "absent", False, True),
    # The audit cleaned the venv: the patched files may have been replaced.
    ({"fused_moe_int64_offsets": "fixed_upstream", "fused_moe_sm70_block_k": "applied"}, "present", True, False),
    # A patch missing from the record, or recorded in the other state.
    ({"fused_moe_sm70_block_k": "applied"}, "present", False, False),
    ({"fused_moe_int64_offsets": "applied", "fused_moe_sm70_block_k": "applied"}, "absent", False, False),
    ({"fused_moe_int64_offsets": "absent", "fused_moe_sm70_block_k": "applied"}, "present", False, False),
    # No record (a new install, or the role on its own): always checked.
    ({}, "present", False, False),
])
def test_patches_recorded(recorded, state, audit_changed, expected):
    assert _engine_fixups.patches_recorded(recorded, BOTH, state, audit_changed) is expected


def test_an_unknown_state_is_refused():
    with pytest.raises(ValueError, match="'maybe' is neither present nor absent"):
        _engine_fixups.patches_recorded({"a": "applied"}, ["a"], "maybe", False)


AUDIT_CLEAN = {"changed": True, "consistent": True, "findings": [], "fingerprint": "f"}
AUDIT_OK = {"changed": False, "consistent": True, "findings": []}
LOOP = {"results": [
    {"item": "fused_moe_int64_offsets", "result": "fixed_upstream", "changed": False, "message": "m1"},
    {"item": "fused_moe_sm70_block_k", "result": "patched", "changed": True, "message": "m2"},
]}


@pytest.mark.parametrize(("audit", "loop", "recorded", "changed", "patches"), [
    # Patched now: source_patch's result names become the record's.
    (AUDIT_OK, LOOP, None, True,
     {"fused_moe_int64_offsets": "fixed_upstream", "fused_moe_sm70_block_k": "applied"}),
    (AUDIT_OK, {"results": [{"item": "a", "result": "already_patched", "changed": False},
                            {"item": "b", "result": "already_absent", "changed": False},
                            {"item": "c", "result": "removed", "changed": True}]}, None, True,
     {"a": "applied", "b": "absent", "c": "absent"}),
    # A clean alone is a change.
    (AUDIT_CLEAN, {"results": [{"item": "a", "result": "already_patched", "changed": False}]}, None, True,
     {"a": "applied"}),
    # Not checked again: the record's results, and the skipped loop's items are no change.
    (AUDIT_OK, {"results": [{"item": "a", "skipped": True, "changed": False}]}, {"a": "applied", "b": "x"}, False,
     {"a": "applied"}),
    # The loop did not run at all (an audit-only use).
    (AUDIT_OK, {}, None, False, {}),
])
def test_summary(audit, loop, recorded, changed, patches):
    asked = list(patches) if recorded is None else ["a"]
    result = _engine_fixups.summary(audit, loop, "/v/bin/python", asked, recorded)
    assert result == {"python": "/v/bin/python", "changed": changed, "patches": patches,
                      "audit": {"consistent": True, "findings": [], "cleaned": audit["changed"]}}


def test_summary_of_an_audit_that_did_not_run():
    audit = _engine_fixups.summary({}, {}, "/p", [], None)["audit"]
    assert audit == {"consistent": None, "findings": [], "cleaned": False}


def test_filters_check_their_inputs():
    assert filters.engine_patches_recorded({"a": "applied"}, ["a"], "present", {"changed": False}) is True
    assert filters.engine_patches_recorded({"a": "applied"}, ["a"], "present", {"changed": True}) is False
    with pytest.raises(AnsibleFilterError, match="expected a mapping and a list"):
        filters.engine_patches_recorded("x", ["a"], "present")
    with pytest.raises(AnsibleFilterError, match="neither present nor absent"):
        filters.engine_patches_recorded({"a": "applied"}, ["a"], "maybe")
    with pytest.raises(AnsibleFilterError, match="recorded must have every patch"):
        filters.engine_fixup_summary(AUDIT_OK, {"patches": ["a", "b"], "recorded": {"a": "applied"}})
    done = {"python": "/p", "patches": ["a"], "patch_loop": {}, "recorded": {"a": "applied"}}
    assert filters.engine_fixup_summary(AUDIT_OK, done)["patches"] == {"a": "applied"}
