# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module payloads a run built, kept for the next run (volta.serving.payload_cache).

ansible-core zips each module with the module_utils it imports once per run, into the run's own temporary
directory, and removes that directory at exit. Each entry there is named after the module and holds only
files read from the controller: the module's source and its module_utils. So an entry built by one run is
the entry the next run would build, as long as none of those sources changed. A store here is one directory
per *source key*, a digest of this store's format, of ansible-core's version and of the place and content of
every module and module_utils file of ansible-core and of this collection; a changed file, another
ansible-core or another copy of either gives another key, and a run only ever restores entries of its own key.

ansible-core's entries are pickles, which run code when they are read, so the store never keeps them: each
entry is a directory holding the payload's zip (``payload.zip``) and a JSON manifest (``manifest.json``: the
zip's sha256 and size, and the two plain fields ansible-core keeps beside it). The callback turns an entry
back into ansible-core's form only in the run's own temporary directory, from data checked here.

Every directory and file of the store is opened without following symbolic links, through directory file
descriptors (so a path re-pointed after a check changes nothing), and is used only when it is the current
user's, no other user can write it, and it is a plain directory or regular file. Anything else refuses the
whole store for the run (``Refused``), with the path, why and the fix: the payloads run as root on the hosts.

Pure Python, no Ansible imports, so unit tests import it directly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import stat
import tempfile
import time

# The layout of a key's directory; part of the key, so a store of another format is never read.
FORMAT = 2
# Entries of modules whose sources the key covers: ansible-core's own modules and this collection's.
# ansible.legacy.* (modules in a role's library/) and other collections' modules are not kept.
KEPT_PREFIXES = ("ansible.modules.", "ansible_collections.volta.serving.plugins.modules.")
# Files ansible-core writes beside the entries while it builds one (a lock and a partial write).
_PARTIAL_SUFFIXES = (".lock", "-part")
# Keys of other sources left unused this long are removed when an entry is stored.
STALE_SECONDS = 14 * 24 * 3600
ZIP, MANIFEST = "payload.zip", "manifest.json"
# A directory an entry is assembled in before it is renamed into place.
PARTIAL_PREFIX = ".part-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
ROOT_FIX = ("set VOLTA_SERVING_PAYLOAD_CACHE to a directory of your own that no other user can write (not a "
            "symbolic link), or leave volta.serving.payload_cache out of callbacks_enabled")


class Refused(Exception):
    """A store, or a part of it, that is not used: *path*, why not, and the fix."""

    def __init__(self, path, why, fix):
        super().__init__(f"{path} {why}")
        self.path, self.why, self.fix = path, why, fix


def source_key(version, trees):
    """The digest of FORMAT, *version*, each directory of *trees* and every file's path and content under it.

    *trees* is a sequence of (label, directory). Editing, adding or removing a file changes the key, and so
    does a tree at another place on disk (ansible-core records the sources' places in a payload's entry).
    Compiled files (``.pyc``) and ``__pycache__`` directories are left out.
    """
    digest = hashlib.sha256(f"format {FORMAT}\nversion {version}\n".encode())
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


def restore(root, key, run_dir, encode):
    """Put the stored entries of *key* into *run_dir* (the run's payload cache); the names put there.

    Every entry of the key is read and checked before any is put: a refused one raises ``Refused`` and
    nothing is put. ``encode(fields, zip_bytes)`` gives the bytes of ansible-core's form of an entry, from
    the manifest's fields (``serialization_profile``, ``source_mapping``) and the zip.
    """
    with _opened_root(root) as root_fd:
        key_path = os.path.join(root, key)
        try:
            key_fd = _open_dir(root_fd, key, key_path, _key_fix(key_path))
        except FileNotFoundError:
            return []
        try:
            entries = _read_entries(key_fd, key_path)
            os.utime(key_fd)  # marks the key as in use, for the pruning in store()
        finally:
            os.close(key_fd)
    os.makedirs(run_dir, mode=0o700, exist_ok=True)
    put = []
    for name, (fields, data) in sorted(entries.items()):
        target = os.path.join(run_dir, name)
        if not os.path.lexists(target):
            _write_whole(run_dir, target, encode(fields, data))
            put.append(name)
    return put


def store(root, key, run_dir, decode, now=None):
    """Keep the entries of *run_dir* that *key*'s store lacks; the names kept.

    ``decode(entry_bytes)`` gives (fields, zip_bytes) of ansible-core's form of an entry, or None for one
    not to keep. The key's directory is checked as in restore() first. Then removes the stores of other keys
    that no run has used for STALE_SECONDS.
    """
    with _opened_root(root) as root_fd:
        key_path = os.path.join(root, key)
        with contextlib.suppress(FileExistsError):
            os.mkdir(key, mode=0o700, dir_fd=root_fd)
        key_fd = _open_dir(root_fd, key, key_path, _key_fix(key_path))
        try:
            have = set(_read_entries(key_fd, key_path))
            kept_now = [name for name in _run_entries(run_dir) if name not in have
                        and _keep_entry(key_fd, name, os.path.join(run_dir, name), decode)]
        finally:
            os.close(key_fd)
        _prune(root_fd, key, time.time() if now is None else now)
    return kept_now


@contextlib.contextmanager
def _opened_root(root):
    """The store's root, opened (made, mode 0700, when missing) and checked; its descriptor."""
    root = root.rstrip(os.sep) or os.sep  # "link/" would follow the link even with O_NOFOLLOW
    try:
        os.makedirs(os.path.dirname(os.path.abspath(root)), exist_ok=True)
        os.mkdir(root, mode=0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise Refused(root, f"cannot be created: {error.strerror}", ROOT_FIX) from error
    try:
        fd = _open_dir(None, root, root, ROOT_FIX)
    except FileNotFoundError as error:
        raise Refused(root, "was removed while it was opened", ROOT_FIX) from error
    try:
        yield fd
    finally:
        os.close(fd)


def _key_fix(key_path):
    return f"remove {key_path} (the next run builds its payloads again and keeps them)"


def _open_dir(dir_fd, name, path, fix):
    """*name* (in *dir_fd*) opened as a directory without following a link, and checked; its descriptor."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise Refused(path, _open_why(dir_fd, name, error, "a directory"), fix) from error
    try:
        _check(os.fstat(fd), path, fix, stat.S_ISDIR, "a directory")
    except Refused:
        os.close(fd)
        raise
    return fd


def _read_file(dir_fd, name, path, fix):
    """The bytes of the regular file *name* (in *dir_fd*), opened without following a link and checked."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        raise Refused(path, _open_why(dir_fd, name, error, "a regular file"), fix) from error
    with os.fdopen(fd, "rb") as handle:
        _check(os.fstat(handle.fileno()), path, fix, stat.S_ISREG, "a regular file")
        return handle.read()


def _open_why(dir_fd, name, error, kind):
    """Why *name* could not be opened: a link or another kind of file, else the system's reason."""
    with contextlib.suppress(OSError):
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            return "is a symbolic link"
        return f"is not {kind}"
    return f"cannot be opened: {error.strerror}"


def _check(info, path, fix, is_kind, kind):
    """Refuse *path* (its stat *info*) unless it is of *kind*, the current user's, and others cannot write it."""
    if stat.S_ISLNK(info.st_mode):
        raise Refused(path, "is a symbolic link", fix)
    if not is_kind(info.st_mode):
        raise Refused(path, f"is not {kind}", fix)
    if info.st_uid != os.geteuid():
        raise Refused(path, f"belongs to another user (uid {info.st_uid})", fix)
    if info.st_mode & 0o022:
        raise Refused(path, f"can be written by other users (mode {stat.S_IMODE(info.st_mode):04o})", fix)


def _read_entries(key_fd, key_path):
    """Every complete entry of the key's directory, checked: {name: (fields, zip_bytes)}.

    Every name in the directory is checked (a partial entry, which another run is writing, too, though it is
    never read). An entry appears whole (its directory is renamed into place), so one lacking its manifest or
    zip is refused.
    """
    fix = _key_fix(key_path)
    entries = {}
    for name in sorted(os.listdir(key_fd)):
        path = os.path.join(key_path, name)
        try:
            info = os.stat(name, dir_fd=key_fd, follow_symlinks=False)
        except FileNotFoundError:  # another run's partial entry, renamed into place since the listing
            continue
        _check(info, path, fix, stat.S_ISDIR, "a directory")
        if name.startswith(PARTIAL_PREFIX):
            continue
        if not kept(name):
            raise Refused(path, "is not an entry of this cache", fix)
        entry_fd = _open_dir(key_fd, name, path, fix)
        try:
            entries[name] = _read_entry(entry_fd, name, path, fix)
        finally:
            os.close(entry_fd)
    return entries


def _read_entry(entry_fd, name, path, fix):
    """(fields, zip_bytes) of the entry directory *path*, checked against its manifest."""
    names = set(os.listdir(entry_fd))
    for other in sorted(names):
        info = os.stat(other, dir_fd=entry_fd, follow_symlinks=False)
        _check(info, os.path.join(path, other), fix, stat.S_ISREG, "a regular file")
    if names != {ZIP, MANIFEST}:
        raise Refused(path, f"holds {', '.join(sorted(names)) or 'nothing'}, not {MANIFEST} and {ZIP}", fix)
    manifest_path = os.path.join(path, MANIFEST)
    manifest = _manifest(_read_file(entry_fd, MANIFEST, manifest_path, fix), name, manifest_path, fix)
    data = _read_file(entry_fd, ZIP, os.path.join(path, ZIP), fix)
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest["zip_sha256"] or len(data) != manifest["zip_size"]:
        raise Refused(os.path.join(path, ZIP), f"does not match its manifest (sha256 {digest}, {len(data)} bytes; "
                      f"{MANIFEST} says {manifest['zip_sha256']}, {manifest['zip_size']} bytes)", fix)
    return {"serialization_profile": manifest["serialization_profile"],
            "source_mapping": manifest["source_mapping"]}, data


def _manifest(raw, name, path, fix):
    """The manifest *raw*, when it is one of this format for the entry *name*; else refused."""
    try:
        manifest = json.loads(raw)
    except ValueError as error:
        raise Refused(path, f"is not JSON ({error})", fix) from error
    mapping = manifest.get("source_mapping") if isinstance(manifest, dict) else None
    valid = (isinstance(manifest, dict) and manifest.get("format") == FORMAT and manifest.get("entry") == name
             and isinstance(manifest.get("zip_sha256"), str) and isinstance(manifest.get("zip_size"), int)
             and not isinstance(manifest.get("zip_size"), bool)
             and isinstance(manifest.get("serialization_profile"), str) and isinstance(mapping, dict)
             and all(isinstance(v, str) for v in mapping.values()))
    if not valid:
        raise Refused(path, f"is not a manifest of format {FORMAT} for {name}", fix)
    return manifest


def _run_entries(run_dir):
    """The names of the entries of *run_dir* (the run's payload cache) a store keeps."""
    try:
        return sorted(name for name in os.listdir(run_dir) if kept(name))
    except FileNotFoundError:
        return []


def _keep_entry(key_fd, name, source, decode):
    """Keep the run's entry *source* as the entry *name*; whether it was kept (another run may have been first)."""
    try:
        fd = os.open(source, _FILE_FLAGS)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return False
        decoded = decode(handle.read())
    if decoded is None:
        return False
    fields, data = decoded
    manifest = {"format": FORMAT, "entry": name, "zip_sha256": hashlib.sha256(data).hexdigest(),
                "zip_size": len(data), "serialization_profile": fields["serialization_profile"],
                "source_mapping": fields["source_mapping"]}
    partial = f"{PARTIAL_PREFIX}{secrets.token_hex(8)}"
    os.mkdir(partial, mode=0o700, dir_fd=key_fd)
    try:
        partial_fd = os.open(partial, _DIR_FLAGS, dir_fd=key_fd)
        try:
            _write_new(partial_fd, ZIP, data)
            _write_new(partial_fd, MANIFEST, json.dumps(manifest, sort_keys=True).encode())
        finally:
            os.close(partial_fd)
        os.rename(partial, name, src_dir_fd=key_fd, dst_dir_fd=key_fd)
    except OSError:  # another run kept the entry first (the rename finds it), or a write failed
        shutil.rmtree(partial, dir_fd=key_fd, ignore_errors=True)
        return False
    return True


def _write_new(dir_fd, name, data):
    """Write the new file *name* (mode 0600) in *dir_fd*."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _write_whole(folder, target, data):
    """Write *target* so that no reader ever sees part of it (a temporary file, then a rename)."""
    handle, partial = tempfile.mkstemp(dir=folder, prefix=PARTIAL_PREFIX)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise


def _prune(root_fd, key, now):
    """Remove the key directories of *root_fd* other than *key* unused for STALE_SECONDS (links are left)."""
    for name in os.listdir(root_fd):
        if name == key:
            continue
        try:
            info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(info.st_mode) and now - info.st_mtime > STALE_SECONDS:
            shutil.rmtree(name, dir_fd=root_fd, ignore_errors=True)
