#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: files
short_description: Directories and whole files of a role in one call, with diff and check mode
description:
  - Makes each of O(directories) a directory with the given owner, group and mode, then writes each of
    O(files) with exactly the given content, owner, group and mode (or removes it with O(files[].state=absent)).
  - A role's configuration becomes one task (one round trip to the host) instead of one per file; templates
    (O(files[].template)) are rendered on the controller, each with its own O(files[].template_vars).
  - Every new or changed file is checked with its O(files[].validate) command before any path is touched,
    so a refused file leaves every directory and file as it was. The exception is a O(files[].helper), a
    program those commands run, which is written with the directories before the other files are checked.
  - Files are written to a temporary file beside the target and moved over it.
  - A link or a directory where a file is wanted (or a file where a directory is wanted) fails the task,
    naming the path; nothing is replaced.
  - With C(--diff), each changed path gets its own diff entry; the content of a O(files[].secret) file is
    never shown (set C(no_log) on the task as well, its content is an argument).
author:
  - volta.serving contributors (@volta-serving)
options:
  directories:
    description: Directories to create or whose attributes to correct, in order (parents first).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      owner:
        description: User name.
        type: str
        default: root
      group:
        description: Group name.
        type: str
        default: root
      mode:
        description: Octal mode as a string.
        type: str
        default: "0755"
  files:
    description: Files to write (or remove), after the directories.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      content:
        description: The whole content. Required unless O(files[].state=absent) or O(files[].template) is given.
        type: str
      template:
        description:
          - A template of the role (its C(templates/) directory, as for M(ansible.builtin.template)), rendered on the
            controller with the task's variables and O(files[].template_vars) into O(files[].content).
        type: str
      template_vars:
        description: Variables added for this file's template only (for example the instance a unit file is for).
        type: dict
        default: {}
      owner:
        description: User name.
        type: str
        default: root
      group:
        description: Group name.
        type: str
        default: root
      mode:
        description: Octal mode as a string.
        type: str
        default: "0644"
      validate:
        description:
          - A command that checks the new content before it is written; C(%s) is the temporary file's path.
          - Split on spaces and run without a shell. Not run in check mode.
        type: str
      secret:
        description: Never show the content in a diff.
        type: bool
        default: false
      state:
        description: V(present) writes the file, V(absent) removes it (a link is removed itself, not what it points at).
        type: str
        choices: [present, absent]
        default: present
      helper:
        description:
          - A program that the O(files[].validate) commands of the same call run (a role's checker of its own
            configuration). It is written, together with the directories, before the other files are checked,
            so one call installs the checker and writes what it checks.
          - A refused file then leaves the helper and the directories written, every other file as it was.
          - Not with O(files[].validate) or O(files[].state=absent).
        type: bool
        default: false
  manifest:
    description:
      - A list of the files a role writes, kept on the host, so that a later run removes what an earlier run
        wrote and it no longer writes, and never a file the role did not write (another program's).
      - The list of an earlier run is read in this call; each path of it that matches O(manifest.match) and is
        not in O(manifest.paths) is removed (as a O(files[].state=absent) entry after O(files)). Then the list
        is written with O(manifest.paths), when there are any or a list is already there.
    type: dict
    suboptions:
      path:
        description: Where the list is kept (one absolute path per line).
        type: path
        required: true
      paths:
        description: The files the role writes now (in O(files), or left out this run but still its own).
        type: list
        elements: path
        default: []
      match:
        description: A regular expression; a listed path that does not match it is never removed.
        type: str
        required: true
      secret:
        description: The removed files are secret (their content is not shown in a diff).
        type: bool
        default: false
      mode:
        description: Octal mode of the list, as a string.
        type: str
        default: "0600"
  exists:
    description:
      - Paths only read, after the changes; RV(exists) says whether each exists (a role that writes its files
        anyway learns, in the same call, whether a program it installs elsewhere is there).
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
    details: Reports what would change; validate commands are not run.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check mode).
    support: full
notes:
  - The module writes plain files only; links (such as an engine's C(current)) are another task's business.
"""

EXAMPLES = r"""
- name: Write the driver's configuration
  volta.serving.files:
    directories:
      - path: /etc/volta
    files:
      - path: /etc/modprobe.d/blacklist-nouveau.conf
        template: blacklist-nouveau.conf.j2
      - path: /etc/systemd/system/volta-a.service
        template: engine.service.j2
        template_vars: {instance: a}
      - path: /etc/nginx/conf.d/volta.conf
        content: "{{ lookup('ansible.builtin.template', 'gateway.conf.j2') }}"
        validate: nginx -t -q -c %s
  register: __nvidia_driver_files

- name: Rebuild the initramfs when the blacklist changed
  ansible.builtin.command: update-initramfs -u
  when: "'/etc/modprobe.d/blacklist-nouveau.conf' in __nvidia_driver_files.changed_paths"
  changed_when: true
"""

RETURN = r"""
changed_paths:
  description: Every directory and file that changed (or would change, in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: [/etc/modprobe.d/blacklist-nouveau.conf]
paths:
  description: For each path, what changed (V(created), V(content), V(removed), C(mode 0600 -> 0644), ...).
  returned: always
  type: dict
  sample: {/etc/volta: [], /etc/modprobe.d/blacklist-nouveau.conf: [content]}
exists:
  description: For each path of O(exists), whether it exists (a link counts when what it points at exists).
  returned: always
  type: dict
  sample: {/srv/models/.tools/hub/bin/hf: true}
"""

import grp
import os
import pwd
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils import _files

_COMMON = {"path": {"type": "path", "required": True}, "owner": {"type": "str", "default": "root"},
           "group": {"type": "str", "default": "root"}}
ARGUMENT_SPEC = {
    "directories": {"type": "list", "elements": "dict", "default": [],
                    "options": {**_COMMON, "mode": {"type": "str", "default": "0755"}}},
    "files": {"type": "list", "elements": "dict", "default": [],
              "options": {**_COMMON, "mode": {"type": "str", "default": "0644"},
                          "content": {"type": "str"}, "validate": {"type": "str"},
                          # Rendered into content by the action plugin (plugins/action/files.py).
                          "template": {"type": "str"}, "template_vars": {"type": "dict", "default": {}},
                          "secret": {"type": "bool", "default": False, "no_log": False},
                          "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
                          "helper": {"type": "bool", "default": False}},
              "required_if": [("state", "present", ["content"])]},
    "manifest": {"type": "dict", "options": {
        "path": {"type": "path", "required": True}, "paths": {"type": "list", "elements": "path", "default": []},
        "match": {"type": "str", "required": True}, "secret": {"type": "bool", "default": False, "no_log": False},
        "mode": {"type": "str", "default": "0600"}}},
    "exists": {"type": "list", "elements": "path", "default": []},
}
# What AnsibleModule fills in for an O(files) entry left at its defaults (the manifest's entries).
_FILE_DEFAULTS = {name: spec.get("default") for name, spec in ARGUMENT_SPEC["files"]["options"].items()}


def _ids(module, want):
    """(uid, gid) of the path's owner and group. In check mode one that does not exist yet (an earlier task
    would create it) is None: the path is reported as changing; a real run fails, naming it."""
    ids = []
    for kind, name, read in (("owner", want["owner"], lambda n: pwd.getpwnam(n).pw_uid),
                             ("group", want["group"], lambda n: grp.getgrnam(n).gr_gid)):
        try:
            ids.append(read(name))
        except KeyError:
            if not module.check_mode:
                module.fail_json(msg=f"{want['path']}: {kind} {name} does not exist on this host; create it first "
                                     "(or name an existing one). Nothing was changed.")
            ids.append(None)
    return tuple(ids)


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _read(path, st):
    if st is None or not os.path.isfile(path) or os.path.islink(path):
        return None
    with open(path, "rb") as fh:
        return fh.read()


def _plan(module):
    """[(kind, want, changes, current, uid, gid)] for every path, directories first."""
    out = []
    for want in module.params["directories"]:
        uid, gid = _ids(module, want)
        try:
            changes = _files.directory_changes(want, _lstat(want["path"]), uid, gid)
        except ValueError as err:
            module.fail_json(msg=f"{err}. Nothing was changed.")
        out.append(("directory", want, changes, None, uid, gid))
    for given in module.params["files"]:
        uid, gid = _ids(module, given)
        want = dict(given, content=(given["content"] or "").encode("utf-8"))
        st = _lstat(want["path"])
        current = _read(want["path"], st)
        try:
            changes = _files.file_changes(want, st, current, uid, gid)
        except ValueError as err:
            module.fail_json(msg=f"{err}. Nothing was changed.")
        out.append(("file", want, changes, current, uid, gid))
    return out


def _validate(module, plan, written):
    """Run every changed file's validate command on its new content; fail before any other write.

    written: what was already written before the checks (the directories and helpers), named in the message."""
    unchanged = "Nothing was changed." if not written else \
        f"Nothing else was changed (written before the checks: {', '.join(written)})."
    for kind, want, changes, _current, _uid, _gid in plan:
        if kind != "file" or not want.get("validate") or not {"created", "content"} & set(changes):
            continue
        # In the system's temporary directory, not module.tmpdir: that one is Ansible's remote_tmp, which a
        # module run through pipelining creates on a fresh host, warning that it "did not exist".
        fd, tmp = tempfile.mkstemp(prefix="volta-validate-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(want["content"])
            _run_validate(module, want, tmp, unchanged)
        finally:  # also when fail_json exits
            os.unlink(tmp)


def _run_validate(module, want, tmp, unchanged):
    """want's validate command on *tmp* (its new content); fail_json naming the file when it fails."""
    try:
        argv = _files.validate_argv(want["validate"], tmp)
    except ValueError as err:
        module.fail_json(msg=f"{want['path']}: {err}")
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg=f"{want['path']}: the new content fails `{want['validate']}` (rc {rc}): "
                             f"{(err or out).strip()[-1500:]}. {unchanged}")


def _apply_file(module, want, uid, gid):
    path = want["path"]
    if want["state"] == "absent":
        os.unlink(path)
        return
    fd, tmp = tempfile.mkstemp(prefix=".volta-", dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as fh:
        fh.write(want["content"])
    os.chmod(tmp, _files._mode(want["mode"]))
    os.chown(tmp, uid, gid)
    module.atomic_move(tmp, path, unsafe_writes=False, keep_dest_attrs=False)
    os.chmod(path, _files._mode(want["mode"]))
    os.chown(path, uid, gid)


def _apply(module, plan):
    for kind, want, changes, _current, uid, gid in plan:
        if not changes:
            continue
        if kind == "directory":
            if "created" in changes:
                os.makedirs(want["path"])  # missing parents as ansible.builtin.file makes them
            os.chmod(want["path"], _files._mode(want["mode"]))
            os.chown(want["path"], uid, gid)
        elif {"created", "content", "removed"} & set(changes):
            _apply_file(module, want, uid, gid)
        else:
            os.chmod(want["path"], _files._mode(want["mode"]))
            os.chown(want["path"], uid, gid)


def _split(plan):
    """(written before the checks, the rest): the directories and the helpers go first when a helper changes."""
    if not any(kind == "file" and want["helper"] and changes for kind, want, changes, *_rest in plan):
        return [], plan
    first, rest = [], []
    for entry in plan:
        (first if entry[0] == "directory" or entry[1]["helper"] else rest).append(entry)
    return first, rest


def _add_manifest(module):
    """Append to O(files) the removals and the new list that O(manifest) calls for (the old list read here)."""
    manifest = module.params["manifest"]
    if not manifest:
        return
    st = _lstat(manifest["path"])
    if st is not None and not os.path.isfile(manifest["path"]):
        module.fail_json(msg=f"{manifest['path']} (the list of written files) is not a plain file; move it away. "
                             "Nothing was changed.")
    old = _read(manifest["path"], st)
    try:
        entries = _files.manifest_entries(manifest, None if old is None else old.decode("utf-8", "replace"))
    except ValueError as err:
        module.fail_json(msg=f"{manifest['path']}: {err}. Nothing was changed.")
    module.params["files"].extend(dict(_FILE_DEFAULTS, **entry) for entry in entries)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    _add_manifest(module)
    for want in module.params["directories"] + module.params["files"]:
        try:
            _files._mode(want["mode"])
        except ValueError as err:
            module.fail_json(msg=f"{want['path']}: {err}")
    for want in module.params["files"]:
        if want["helper"] and (want["validate"] or want["state"] == "absent"):
            module.fail_json(msg=f"{want['path']}: a helper is written before the checks and is neither checked "
                                 "nor removed; drop validate (or state absent) or helper. Nothing was changed.")
    plan = _plan(module)
    changed_paths = [want["path"] for _kind, want, changes, *_rest in plan if changes]
    result = {"changed": bool(changed_paths), "changed_paths": changed_paths,
              "paths": {want["path"]: changes for _kind, want, changes, *_rest in plan}}
    if module._diff:
        diffs = [_files.directory_diff(want, changes) if kind == "directory"
                 else _files.file_diff(want, current, changes)
                 for kind, want, changes, current, _uid, _gid in plan]
        result["diff"] = [d for d in diffs if d]
    if changed_paths and not module.check_mode:
        first, rest = _split(plan)
        _apply(module, first)
        _validate(module, rest, [want["path"] for _kind, want, changes, *_r in first if changes])
        _apply(module, rest)
    result["exists"] = {path: os.path.exists(path) for path in module.params["exists"]}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
