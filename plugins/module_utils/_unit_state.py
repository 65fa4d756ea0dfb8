# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What volta.serving.unit_state reports: the engine units' state in one read (pure parts, unit tested).

The module reads the host (systemctl, links, files) and these functions turn what it read into the
answers engine_service acts on: which units run, which are enabled, which engine install each
instance's engine is on now ("<install>@<sha256 of its record>") against the one it was started on.
systemctl_states is the one read of units (is-active, is-enabled) that unit_state and package_state share.
"""

from __future__ import annotations

import os


def systemctl_lines(units, stdout):
    """{unit: state} from systemctl is-active/is-enabled output, one line per unit in order ('' when none)."""
    lines = stdout.splitlines()
    return {unit: (lines[i].strip() if i < len(lines) else "") for i, unit in enumerate(units)}


def systemctl_states(module, units, required=False):
    """{unit: {"active": state, "enabled": state}} read with systemctl is-active and is-enabled.

    One run per unit and verb: a unit without a unit file prints nothing to is-enabled, so one run for all
    units could not tell whose line is whose. Without systemctl on the host: the module fails when required,
    else every unit reads ''.
    """
    systemctl = module.get_bin_path("systemctl", required=required)
    out = {unit: {"active": "", "enabled": ""} for unit in units}
    for unit in units if systemctl else ():
        for verb in ("active", "enabled"):
            _rc, stdout, _err = module.run_command([systemctl, f"is-{verb}", unit])
            out[unit][verb] = systemctl_lines([unit], stdout)[unit]
    return out


def down(states):
    """The units of systemctl_states that are not both active and enabled, in order."""
    return [unit for unit, state in states.items() if (state["active"], state["enabled"]) != ("active", "enabled")]


def install_now(link_target, record_sha256):
    """The install an engine is on now, as the start record stores it: '<install dir name>@<record sha256>'."""
    return f"{os.path.basename(link_target or '')}@{record_sha256 or ''}"


def stale_entry(instance, link_exists, now, started):
    """The instance's entry when it runs another install than its engine's current one, else None.

    started is the content of <state_dir>/<name>.started ('' when there is none): no record counts as
    another install (the instance is restarted once, and the record is written).
    """
    if not link_exists or started == now:
        return None
    return {"name": instance["name"], "engine": instance["engine"], "started": started or "unknown", "now": now,
            "previous": started.split("@")[0], "install": now.split("@")[0]}


def marked_units(contents, marker):
    """The unit file names (of {name: text}) whose text has a line starting with marker, sorted."""
    return sorted(name for name, text in contents.items()
                  if any(line.startswith(marker) for line in text.splitlines()))


def account_changes(want_groups, user, read_group, read_user):
    """What the service account and groups lack, as short phrases ([] when both are as wanted).

    want_groups: group names that must exist. user: {name, group, groups, home, shell, comment}.
    read_group(name) -> (gid, members) or None; read_user(name) -> {gid, home, shell, gecos} or None.
    """
    out = [f"group {g} is missing" for g in dict.fromkeys([*want_groups, user["group"]]) if read_group(g) is None]
    found = read_user(user["name"])
    if found is None:
        return [*out, f"user {user['name']} is missing"]
    primary = read_group(user["group"])
    if primary is not None and found["gid"] != primary[0]:
        out.append(f"user {user['name']}'s primary group is not {user['group']}")
    for field, key in (("home", "home"), ("shell", "shell"), ("comment", "gecos")):
        if user.get(field) is not None and found[key] != user[field]:
            out.append(f"user {user['name']}'s {field} is {found[key]!r}, not {user[field]!r}")
    for group in user.get("groups") or []:
        got = read_group(group)
        if got is not None and user["name"] not in got[1] and got[0] != found["gid"]:
            out.append(f"user {user['name']} is not in group {group}")
    return out
