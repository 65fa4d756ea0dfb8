# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module payloads a run built, kept for the next run (volta.serving.payload_cache).

ansible-core zips each module with the module_utils it imports once per run, into the run's own temporary
directory, and removes that directory at exit. Each entry there is named after the module and holds only
files read from the controller: the module's source and its module_utils. So an entry built by one run is
the entry the next run would build, as long as none of those sources changed. A store here is one directory
per *source key*, a digest of ansible-core's version and of the place and content of every module and
module_utils file of ansible-core and of this collection; a changed file, another ansible-core or another
copy of either gives another key, and a run only ever restores entries of its own key.

Pure Python, no Ansible imports, so unit tests import it directly.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time

# Entries of modules whose sources the key covers: ansible-core's own modules and this collection's.
# ansible.legacy.* (modules in a role's library/) and other collections' modules are not kept.
KEPT_PREFIXES = ("ansible.modules.", "ansible_collections.volta.serving.plugins.modules.")
# Files ansible-core writes beside the entries while it builds one (a lock and a partial write).
_PARTIAL_SUFFIXES = (".lock", "-part")
# Keys of other sources left unused this long are removed when an entry is stored.
STALE_SECONDS = 14 * 24 * 3600


def source_key(version, trees):
    """The digest of *version*, of each directory of *trees* and of every file's path and content under it.

    *trees* is a sequence of (label, directory). Editing, adding or removing a file changes the key, and so
    does a tree at another place on disk (ansible-core records the sources' places in a payload's entry).
    Compiled files (``.pyc``) and ``__pycache__`` directories are left out.
    """
    digest = hashlib.sha256(f"version {version}\n".encode())
    for label, top in trees:
        digest.update(f"tree {label} {os.path.abspath(top)}\n".encode())
        for folder, subfolders, names in os.walk(top):
            subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".pyc"):
                    continue
                path = os.path.join(folder, name)
                with open(path, "rb") as source:
                    content = source.read()
                relative = os.path.relpath(path, top)
                digest.update(f"file {relative} {len(content)}\n".encode())
                digest.update(content)
    return digest.hexdigest()


def kept(name):
    """Whether the payload cache entry *name* is one a store keeps."""
    return name.startswith(KEPT_PREFIXES) and not name.endswith(_PARTIAL_SUFFIXES)


def usable_store(root):
    """None when *root* can hold entries for this user, else why not.

    The entries are run on the hosts, so only a directory of this user's that no one else can write is used;
    it is made (mode 0700) when missing.
    """
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        info = os.stat(root)
    except OSError as error:
        return f"cannot create {root}: {error.strerror}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{root} is not a directory"
    if info.st_uid != os.geteuid():
        return f"{root} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        return f"{root} can be written by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def restore(root, key, run_dir):
    """Copy the stored entries of *key* into *run_dir* (the run's payload cache); the names copied."""
    store_dir = os.path.join(root, key)
    if not os.path.isdir(store_dir):
        return []
    copied = _copy_missing(store_dir, run_dir)
    os.utime(store_dir)  # marks the key as in use, for the pruning in store()
    return copied


def store(root, key, run_dir, now=None):
    """Copy the entries of *run_dir* that *key*'s store lacks into it; the names copied.

    Then removes the stores of other keys that no run has used for STALE_SECONDS.
    """
    copied = _copy_missing(run_dir, os.path.join(root, key))
    _prune(root, key, time.time() if now is None else now)
    return copied


def _copy_missing(source_dir, target_dir):
    """Copy each kept entry of *source_dir* that *target_dir* lacks (made, mode 0700, when needed); the names."""
    try:
        names = sorted(n for n in os.listdir(source_dir) if kept(n))
    except FileNotFoundError:
        return []
    copied = []
    for name in names:
        target = os.path.join(target_dir, name)
        if not os.path.exists(target):
            os.makedirs(target_dir, mode=0o700, exist_ok=True)
            _copy_whole(os.path.join(source_dir, name), target)
            copied.append(name)
    return copied


def _copy_whole(source, target):
    """Copy *source* to *target* so that no reader ever sees part of it (a temporary file, then a rename)."""
    handle, partial = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".part-")
    try:
        with os.fdopen(handle, "wb") as out, open(source, "rb") as data:
            shutil.copyfileobj(data, out)
        os.replace(partial, target)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise


def _prune(root, key, now):
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name == key or not os.path.isdir(path):
            continue
        try:
            unused = now - os.stat(path).st_mtime
        except FileNotFoundError:
            continue
        if unused > STALE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)
