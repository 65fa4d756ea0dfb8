# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What volta.serving.files would change: directories and whole files, compared with the host.

Pure functions over what the module read (os.lstat results, file bytes) so that they are unit
tested without a host. The module (plugins/modules/files.py) reads, asks these functions, then
validates every new file before it writes any, so a refused file leaves every path untouched.
"""

from __future__ import annotations

import hashlib
import re
import stat

SECRET_DIFF = "(secret: content not shown)\n"  # noqa: S105  a placeholder, not a password


def _mode(text):
    """'0644' -> 0o644; the modes of this module are octal strings (YAML would read 0644 as 420)."""
    value = str(text)
    if not value or any(c not in "01234567" for c in value) or len(value) > 4:
        raise ValueError(f"mode {text!r} is not an octal mode such as '0644'")
    return int(value, 8)


def attribute_changes(want, st, uid, gid):
    """The attributes of an existing path that differ from want: a list of 'mode 0600 -> 0644' strings."""
    out = []
    mode = _mode(want["mode"])
    if stat.S_IMODE(st.st_mode) != mode:
        out.append(f"mode {stat.S_IMODE(st.st_mode):04o} -> {mode:04o}")
    # uid/gid None: an owner or group that does not exist yet (check mode, an earlier task creates it).
    if uid is None or st.st_uid != uid:
        out.append(f"owner {st.st_uid} -> {want['owner']}")
    if gid is None or st.st_gid != gid:
        out.append(f"group {st.st_gid} -> {want['group']}")
    return out


def directory_changes(want, st, uid, gid):
    """What making want['path'] a directory with want's attributes changes, given its lstat (None: absent).

    Raises ValueError when the path exists and is not a directory: replacing a file or a link
    by a directory is not this module's call to make.
    """
    if st is None:
        return ["created"]
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{want['path']} exists and is not a directory; move it away or choose another path")
    return attribute_changes(want, st, uid, gid)


def sha1(data):
    return hashlib.sha1(data).hexdigest()  # noqa: S324  a content comparison, as Ansible's copy does


def file_changes(want, st, current, uid, gid):
    """What writing want (content, mode, owner, group; state present/absent) changes.

    st is the path's lstat (None: absent) and current its bytes (None when absent). A link or a
    directory at the path is refused (ValueError): the module writes plain files only. Removing
    (state absent) takes a file or a link (the link itself, never what it points at), not a directory.
    """
    absent = want.get("state", "present") == "absent"
    if st is not None and not stat.S_ISREG(st.st_mode) and not (absent and stat.S_ISLNK(st.st_mode)):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a link" if stat.S_ISLNK(st.st_mode) else "not a file"
        raise ValueError(f"{want['path']} is {kind}; this task writes plain files only")
    if absent:
        return ["removed"] if st is not None else []
    if st is None:
        return ["created"]
    out = [] if sha1(current) == sha1(want["content"]) else ["content"]
    return out + attribute_changes(want, st, uid, gid)


def file_diff(want, current, changes):
    """The --diff entry of one file (None when nothing changes); a secret file's content is not shown."""
    if not changes:
        return None
    secret = want.get("secret", False)

    def text(data):
        if data is None:
            return ""
        return SECRET_DIFF if secret else data.decode("utf-8", "replace")

    after = None if want.get("state", "present") == "absent" else want["content"]
    return {"before_header": want["path"], "after_header": want["path"],
            "before": text(current), "after": text(after)}


def directory_diff(want, changes):
    if not changes:
        return None
    return {"before_header": want["path"], "after_header": want["path"],
            "before": "absent\n" if changes == ["created"] else "directory\n",
            "after": f"directory {want['mode']} {want['owner']}:{want['group']}\n"}


def validate_argv(command, path):
    """The validate command with %s replaced by path (shell-free: the command is split on spaces)."""
    if "%s" not in command:
        raise ValueError(f"validate command {command!r} has no %s (the place of the file to check)")
    return [path if part == "%s" else part.replace("%s", path) for part in command.split()]


def manifest_entries(manifest, listed):
    """The O(files) entries that keep a list of written files: removals, then the list itself.

    manifest: the module's O(manifest) (path, paths, match, secret, mode); listed: the text of the list an
    earlier run wrote (None: there is none). A listed path that does not match manifest['match'] is
    left alone; one that matches and is not in manifest['paths'] any more is removed. The list is
    written when there are paths to list or a list is already there.
    """
    try:
        match = re.compile(manifest["match"])
    except re.error as err:
        raise ValueError(f"match {manifest['match']!r} is not a regular expression ({err})") from None
    wanted = sorted(set(manifest["paths"]))
    old = [line for line in (listed or "").splitlines() if match.search(line)]
    out = [{"path": path, "state": "absent", "secret": manifest["secret"]}
           for path in sorted(set(old) - set(wanted))]
    if wanted or listed is not None:
        out.append({"path": manifest["path"], "content": "".join(f"{path}\n" for path in wanted),
                    "mode": manifest["mode"]})
    return out
