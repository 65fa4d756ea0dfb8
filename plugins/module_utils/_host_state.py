# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a role's no-change run needs to know, from what volta.serving.host_state read.

Pure functions (unit tested without a host). A file is compared as volta.serving.files would write
it, but by the sha1 of its wanted content when that is given (a secret file: its content never
travels to the host for a mere comparison); the module (plugins/modules/host_state.py) reads.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.module_utils import _files


def file_changes(want, st, current, uid, gid):
    """What volta.serving.files would change for want: by content, or by want['sha1'] when given."""
    if want.get("sha1") is None:
        return _files.file_changes(dict(want, content=(want.get("content") or "").encode("utf-8")),
                                   st, current, uid, gid)
    changes = _files.file_changes(dict(want, content=current or b""), st, current, uid, gid)
    if st is None or changes[:1] == ["removed"]:
        return changes
    return (["content"] if _files.sha1(current or b"") != want["sha1"] else []) + changes


def units(names, is_active_stdout, is_enabled_stdout):
    """{name: {active, enabled}} from `systemctl is-active NAMES` and `systemctl is-enabled NAMES` (a line each)."""
    active = is_active_stdout.splitlines()
    enabled = is_enabled_stdout.splitlines()
    return {name: {"active": i < len(active) and active[i].strip() == "active",
                   "enabled": i < len(enabled) and enabled[i].strip() == "enabled"}
            for i, name in enumerate(names)}
