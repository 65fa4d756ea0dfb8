# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fix-up of one engine venv (role volta.serving._engine_fixups) decided: controller only.

``patches_recorded``: whether the install's record already has every patch asked for in the wanted state
(then the patches are not checked again); ``summary``: the role's result from the audit and the patch loop.
"""

from __future__ import annotations

# The recorded patch results that already are the wanted state: source_patch's RESULTS_PRESENT /
# RESULTS_ABSENT (plugins/module_utils/_source_patch.py) as the record names them.
DONE = {
    "present": frozenset(("applied", "fixed_upstream", "not_needed")),
    "absent": frozenset(("absent", "fixed_upstream", "not_needed")),
}
# source_patch's result -> the record's name (others are kept as they are).
RECORDED_AS = {"patched": "applied", "already_patched": "applied", "removed": "absent", "already_absent": "absent"}


def patches_recorded(recorded, patches, state, audit_changed):
    """True when *recorded* (name -> result) has every patch of *patches* in a result that is *state*
    already, and the NCCL audit changed nothing (a clean may have replaced the patched files)."""
    if state not in DONE:
        raise ValueError(f"patch state {state!r} is neither present nor absent")
    if not recorded or audit_changed:
        return False
    return all(name in recorded and recorded[name] in DONE[state] for name in patches)


def summary(audit, patch_loop, python, patches, recorded=None):
    """The fix-up's result: {python, changed, audit {consistent, findings, cleaned}, patches}.

    *audit* is pip_cuda_audit's registered result, *patch_loop* the registered source_patch loop ({} when it
    did not run); *recorded* (name -> result) is given when the patches were not checked again, and is then
    what the result reports for them."""
    audit = audit or {}
    cleaned = bool(audit.get("changed", False))
    results = [r for r in (patch_loop or {}).get("results") or [] if isinstance(r, dict)]
    if recorded is not None:
        found = {name: recorded[name] for name in patches}
        patched = False
    else:
        found = {r["item"]: RECORDED_AS.get(r["result"], r["result"]) for r in results if "result" in r}
        patched = any(r.get("changed") for r in results)
    return {
        "python": python,
        "changed": cleaned or patched,
        "audit": {"consistent": audit.get("consistent"), "findings": audit.get("findings", []), "cleaned": cleaned},
        "patches": found,
    }
