# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters file_entries and unit_files: the entries of volta.serving.files, built from lists."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

_KEYS = ("owner", "group", "mode", "state")


def file_entries(paths, **attributes):
    """Each path as an entry {path, owner, group, mode, state} of volta.serving.files (attributes given only)."""
    unknown = sorted(set(attributes) - set(_KEYS))
    if unknown:
        raise AnsibleFilterError(f"file_entries: unknown attribute(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise AnsibleFilterError(f"file_entries: expected a list of paths, got {type(paths).__name__}")
    return [{"path": str(path), **attributes} for path in paths]


def unit_files(instances, template, var, unit_dir="/etc/systemd/system", verifier=None, unverified=()):
    """One entry per planned instance: its unit file rendered from template with var set to the instance.

    With verifier, each unit is checked by `verifier %s <unit>` (systemd-analyze verify under the
    unit's own name) before it is written, except the instances named in unverified (their engine
    program is not installed yet, so systemd-analyze would refuse the unit for that alone).
    """
    out = []
    for instance in instances:
        entry = {"path": f"{unit_dir.rstrip('/')}/{instance['unit']}", "template": template,
                 "template_vars": {var: instance}}
        if verifier and instance["name"] not in unverified:
            entry["validate"] = f"{verifier} %s {instance['unit']}"
        out.append(entry)
    return out


class FilterModule:
    def filters(self):
        return {"file_entries": file_entries, "unit_files": unit_files}
