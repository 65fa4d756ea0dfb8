# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt's package lists: when to refresh them, and what ``apt-cache policy`` says about packages.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection
(leading underscore): no compatibility promise outside volta.serving.

Why not only a cache age: a freshly built image has an empty ``/var/lib/apt/lists`` with a recent
mtime, and a host whose repository was added a minute ago has fresh lists without it. Both look
"fresh" to ``cache_valid_time`` while apt knows nothing of the packages wanted. The lists are
refreshed when any of these holds: the sources changed in this run, a sources, keyring or
preferences file is newer than the lists, a wanted package has no candidate, or the lists are
older than the cache time.
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import struct

ETC_APT = "/etc/apt"
LISTS_DIR = "/var/lib/apt/lists"
# Touched by Ubuntu's APT::Update::Post-Invoke-Success hook and read by ansible.builtin.apt's
# cache_valid_time; touched here after every refresh, so that both agree on the lists' age.
STAMP = "/var/lib/apt/periodic/update-success-stamp"
# The locks apt and dpkg take; apt-get update waits on none of them (DPkg::Lock::Timeout covers
# only the dpkg frontend lock of install/remove), so the module retries while one is held.
LOCKS = (
    "/var/lib/apt/lists/lock",
    "/var/lib/dpkg/lock-frontend",
    "/var/lib/dpkg/lock",
    "/var/cache/apt/archives/lock",
)

_HEADER_RE = re.compile(r"^(\S+):$")
_FIELD_RE = re.compile(r"^  (Installed|Candidate): (\S+)$")
# Version-table rows: "     580.95.05-0ubuntu0.24.04.1 500" (" *** " marks the installed one;
# Ubuntu may append "(phased 10%)"); origin rows are indented further.
_VERSION_RE = re.compile(r"^ (?:\*\*\*|   ) (\S+) (-?\d+)(?: .*)?$")
_ORIGIN_RE = re.compile(r"^ {8}-?\d+ (.+)$")
# "Package files:" rows of `apt-cache policy` without arguments.
_PACKAGE_FILE_RE = re.compile(r"^ -?\d+ (\S+)(.*?)\s*Packages$")
_SIGNED_BY_RE = re.compile(r"(?:^Signed-By:\s*|signed-by=)(/[^\s\]]+)", re.IGNORECASE | re.MULTILINE)
_LOCK_ERRORS = ("Could not get lock", "Unable to lock directory", "Unable to acquire the dpkg frontend lock")


def parse_policy(text):
    """``apt-cache policy NAME...`` output -> {name: {installed, candidate, versions, origins}}.

    ``installed`` and ``candidate`` are None for "(none)"; ``versions`` lists the version table
    newest first; ``origins`` the repositories that offer any of them. A package apt does not know
    at all is simply absent (apt-cache prints nothing for it).
    """
    packages, current = {}, None
    for line in text.splitlines():
        header = _HEADER_RE.match(line)
        if header:
            current = packages.setdefault(header.group(1), {
                "installed": None, "candidate": None, "versions": [], "origins": []})
            continue
        if current is None:
            continue
        field = _FIELD_RE.match(line)
        version = _VERSION_RE.match(line)
        origin = _ORIGIN_RE.match(line)
        if field:
            value = field.group(2)
            current[field.group(1).lower()] = None if value == "(none)" else value
        elif version:
            if version.group(1) not in current["versions"]:
                current["versions"].append(version.group(1))
        elif origin and origin.group(1) != "/var/lib/dpkg/status":
            if origin.group(1) not in current["origins"]:
                current["origins"].append(origin.group(1))
    return packages


def parse_package_files(text):
    """The repositories of ``apt-cache policy`` (no arguments): "URL suite/component arch" each."""
    found = []
    for line in text.splitlines():
        match = _PACKAGE_FILE_RE.match(line)
        if match and match.group(1) != "/var/lib/dpkg/status":
            entry = " ".join((match.group(1) + match.group(2)).split())
            if entry not in found:
                found.append(entry)
    return found


def in_branch(version, branch):
    """Whether a Debian version (an epoch allowed) is of driver branch *branch* ("" = any)."""
    return not branch or re.match(r"^(\d+:)?" + re.escape(branch) + r"\.", version or "") is not None


def pick_version(info, wanted, branch=""):
    """The version of one package to install, or "" when there is none.

    *info* is one entry of :func:`parse_policy` (None when apt does not know the package).
    wanted "" keeps the installed version, else takes the candidate. A wanted upstream version
    (580.95.05) or Debian version (580.95.05-0ubuntu0.24.04.1) takes the first available or
    installed version equal to it or starting with it followed by "-" (after any epoch).
    With *branch* ("580"), only versions of that branch count: where one package name spans
    branches (Debian's nvidia-driver-cuda), "" takes the newest of the branch, not the candidate.
    """
    info = info or {}
    installed = info.get("installed") or ""
    if not wanted:
        candidates = [installed, info.get("candidate") or "", *info.get("versions", [])]
        return next((v for v in candidates if v and in_branch(v, branch)), "")
    pattern = re.compile(r"(\d+:)?" + re.escape(wanted) + r"(-|$)")
    for version in [*info.get("versions", []), installed]:
        if version and pattern.match(version) and in_branch(version, branch):
            return version
    return ""


def signed_by_paths(text):
    """Keyring files named by Signed-By (deb822) or [signed-by=...] (one-line) in a sources file."""
    return _SIGNED_BY_RE.findall(text)


def deb822_paragraphs(text):
    """The paragraphs of a deb822 sources file as {field: value} dicts, in order (comments left out).

    A continuation line (one that starts with a space) is joined to its field with a newline, as deb822 keeps it.
    """
    paragraphs, current, field = [], {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, field = {}, None
        elif line[0] in " \t" and field:
            current[field] += "\n" + line.strip()
        elif ":" in line:
            field, value = line.split(":", 1)
            current[field.strip()] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


def source_files(etc_apt=ETC_APT):
    """Every file that decides what apt can see: sources, their keyrings, trusted keys, preferences."""
    paths = [os.path.join(etc_apt, "sources.list"), os.path.join(etc_apt, "trusted.gpg"),
             os.path.join(etc_apt, "preferences")]
    for pattern in ("sources.list.d/*.list", "sources.list.d/*.sources", "trusted.gpg.d/*", "preferences.d/*"):
        paths.extend(sorted(glob.glob(os.path.join(etc_apt, pattern))))
    keyrings = []
    for path in paths:
        if path.endswith((".list", ".sources")) and os.path.isfile(path):
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    keyrings.extend(signed_by_paths(handle.read()))
            except OSError:
                continue
    return [p for p in dict.fromkeys(paths + keyrings) if os.path.exists(p)]


def changed_at(path):
    """When a file last changed: the later of mtime and ctime (dpkg and tar keep a package's old
    mtime, but the inode change time is when the file arrived on this host)."""
    st = os.stat(path)
    return max(st.st_mtime, st.st_ctime)


def newest_source(paths):
    """(path, time) of the most recently changed of *paths*; (None, 0.0) for none."""
    best = (None, 0.0)
    for path in paths:
        try:
            when = changed_at(path)
        except OSError:
            continue
        if when > best[1]:
            best = (path, when)
    return best


def lists_time(lists_dir=LISTS_DIR, stamp=STAMP):
    """When the package lists were last refreshed: the later of the lists directory's mtime and the stamp."""
    times = [0.0]
    for path in (lists_dir, stamp):
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return max(times)


def refresh_reasons(*, sources_changed, newest, lists_at, now, cache_valid_time, unknown):
    """Why the lists must be refreshed (empty: they need not be).

    newest: (path, time) from :func:`newest_source`; lists_at: :func:`lists_time`; unknown: the
    wanted packages without a candidate.
    """
    reasons = []
    if sources_changed:
        reasons.append("the apt sources changed in this run")
    if newest[0] is not None and newest[1] > lists_at:
        reasons.append(f"{newest[0]} is newer than the package lists")
    if unknown:
        reasons.append(f"apt has no candidate for {', '.join(unknown)}")
    age = now - lists_at
    if age > cache_valid_time:
        reasons.append(f"the package lists are older than cache_valid_time ({_age(age)} > {cache_valid_time} s)")
    return reasons


def _age(seconds):
    return "never refreshed" if seconds > 10 * 365 * 86400 else f"{int(seconds)} s"


def is_lock_error(text):
    """Whether apt failed only because another apt or dpkg holds one of its locks."""
    return any(marker in text for marker in _LOCK_ERRORS)


def lock_holder(paths=LOCKS):
    """"PID (command)" of a process that holds one of apt's or dpkg's locks; None when all are free.

    Asks the kernel (F_GETLK) without taking any lock, so it never gets in the other apt's way.
    """
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
            answer = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, query))
        except OSError:
            continue
        finally:
            os.close(fd)
        if answer[0] != fcntl.F_UNLCK:
            return f"{answer[4]} ({_command(answer[4])}) on {path}"
    return None


def _command(pid):
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def installed_versions(policy, names):
    """{name: installed version} of those of *names* that apt's policy says are installed."""
    return {n: (policy.get(n) or {}).get("installed") for n in names if (policy.get(n) or {}).get("installed")}


def installed_rows(rows):
    """The fields of the dpkg-query rows ("name version want status [source]") of installed packages.

    Only the status "installed" counts: a package unpacked but not configured, half-installed or
    removed with its configuration kept is not installed.
    """
    return [fields for fields in (row.split() for row in rows) if len(fields) >= 4 and fields[3] == "installed"]


def not_installed(rows, names):
    """Those of *names* that dpkg-query rows do not show installed (see :func:`installed_rows`)."""
    present = {fields[0] for fields in installed_rows(rows)}
    return [name for name in names if name not in present]


def plan_changes(policy, installed, packages, extra=(), target=None, holds=None):
    """What a run must change so that *packages* are at *target* and *extra* are installed.

    policy: :func:`parse_policy`; installed: {name: version} of the installed packages that count
    (those of *packages* and *extra*, and any others the caller looks at); target: the version
    *packages* must have (:func:`pick_version`), None or "" plans none of them. holds: None, or
    {installed: {name: version}, held: [names]} of the packages to keep held (the driver's).
    Returns {install: apt specs (name=version, or name), upgrade: the names of *packages* installed at
    another version, release: the holds to release before that, hold: the installed ones not held}.
    A package of *extra* without a candidate is left out (the caller reports it as missing).
    """
    pending = [p for p in packages if installed.get(p) != target] if target else []
    fresh = [e for e in extra if e not in installed and (policy.get(e) or {}).get("candidate")]
    held = sorted(holds["held"]) if holds else []
    return {
        "install": [f"{p}={target}" for p in pending] + fresh,
        "upgrade": [p for p in pending if p in installed],
        "release": held if pending else [],
        "hold": sorted(n for n in holds["installed"] if n not in held) if holds else [],
    }
