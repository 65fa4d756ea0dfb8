# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables and instance fields volta.serving reads, and "did you mean" for the ones it does not.

Controller only (reads the collection's own files). The one home of the variable names is the roles'
argument specs (``roles/<role>/meta/argument_specs.yml``, every entry point): a host variable that starts
with a role's prefix and is none of their options is a typo or a leftover, and is refused by preflight
(``unknown-variable``). ``volta_unknown_variables: warn`` makes these, and unknown instance fields, warnings.
"""

from __future__ import annotations

import difflib
import functools
import os

from ansible_collections.volta.serving.plugins.plugin_utils._defaults import ROLES, load_yaml
from ansible_collections.volta.serving.plugins.plugin_utils._findings import WARNING, finding

# The prefixes of the roles' public variables (and volta_ for the whole run's); longest first is not
# needed: a name is ours when it starts with any of them.
PREFIXES = ("nvidia_driver_", "cuda_toolkit_", "engine_", "engine_fixups_", "engine_service_", "model_",
            "api_gateway_", "firewall_", "preflight_", "router_", "exporters_", "prometheus_", "volta_")
UNKNOWN_MODES = ("error", "warn")
# The findings volta_unknown_variables: warn turns into warnings.
UNKNOWN_RULES = ("unknown-variable", "unknown-field")
# How close a known name must be to be suggested (difflib's ratio).
CUTOFF = 0.7
# Variables that were renamed: old name -> new name. An inventory that still sets an old name is refused
# with the new one (unknown-variable), never silently ignored.
RENAMED = {
    # volta.serving.engine_fixups became the engine role's internal step (_engine_fixups): its settings are the
    # engine's.
    "engine_fixups_nccl_state": "engine_nccl_state",
    "engine_fixups_nccl_ignore": "engine_nccl_ignore",
    "engine_fixups_patches": "engine_patches",
    "engine_fixups_patch_state": "engine_patch_state",
    "engine_fixups_sm70_block_k": "engine_sm70_block_k",
    # The engine role's rollback entry point became engine_service's (playbooks/rollback.yml), which switches the
    # link through the internal role _engine_rollback.
    "engine_rollback_flavour": "engine_service_rollback_flavour",
    "engine_rollback_to": "engine_service_rollback_to",
}


@functools.cache
def known_variables(roles=ROLES):
    """Every option of every entry point of every role's argument spec, as a frozenset."""
    names = set()
    for role in sorted(os.listdir(roles)):
        path = os.path.join(roles, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        spec = (load_yaml(path) or {}).get("argument_specs") or {}
        for entry in spec.values():
            names.update((entry or {}).get("options") or {})
    return frozenset(names)


def suggestion(name, known):
    """``did you mean X?`` for the closest known name, or ``""``."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=CUTOFF)
    return f"did you mean {close[0]}? " if close else ""


def ours(name):
    """True for a name with one of the roles' prefixes (private ``__`` names are never ours to check)."""
    return isinstance(name, str) and name.startswith(PREFIXES)


def unknown_variables(host, names, known=None):
    """One ``unknown-variable`` finding per name in *names* that has a role's prefix and no role reads."""
    known = known_variables() if known is None else known
    unknown = sorted({n for n in names if ours(n) and n not in known})
    return [renamed_finding(host, name) if name in RENAMED else unknown_finding(host, name, known)
            for name in unknown]


def unknown_finding(host, name, known):
    """The ``unknown-variable`` finding of a name no role reads, with the closest known name."""
    return finding(
        "unknown-variable", host, None, name,
        f"{name} is not a variable of any volta.serving role; it is ignored.",
        "a misspelt variable silently leaves the role's default in place (a misspelt firewall_api_cidrs "
        "leaves the API reachable by no one).",
        f"{suggestion(name, known)}Rename or remove {name} (each role's variables are the options of its "
        "meta/argument_specs.yml); volta_unknown_variables: warn makes this a warning.",
    )


def renamed_finding(host, name):
    """The ``unknown-variable`` finding of a variable that was renamed: it names the new name."""
    new = RENAMED[name]
    return finding(
        "unknown-variable", host, None, name,
        f"{name} was renamed {new}; {name} is no longer read.",
        "the old name would silently leave the role's default in place.",
        f"Rename {name} to {new} in the inventory (same value).",
    )


def soften(findings, mode):
    """With *mode* ``warn``, the unknown-variable and unknown-field findings become warnings."""
    if mode != "warn":
        return findings
    return [dict(f, severity=WARNING) if f["rule"] in UNKNOWN_RULES else f for f in findings]


def mode_finding(host, mode):
    """An ``invalid-value`` finding when volta_unknown_variables is neither error nor warn, else None."""
    if mode in UNKNOWN_MODES:
        return None
    return finding(
        "invalid-value", host, None, "volta_unknown_variables",
        f"volta_unknown_variables {mode!r} is neither error nor warn.",
        "it says whether unknown variables and instance fields stop the run.",
        "set it to error (the default) or warn.",
    )
