# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine installs under the engine root: discovery, the install in service, pruning, local facts.

Pure Python, no Ansible imports (the module volta.serving.engine_installs is a thin wrapper), so unit
tests call it on directories they write. Private to the collection: no compatibility promise outside it.

Layout (volta.serving.engine): ``<root>/<flavour>/<install>/`` per install, where ``<install>`` is
``<flavour>-<version>-...``; an install is finished when it holds the marker file (its JSON record,
written after its smoke test passed); ``<root>/<flavour>/current`` is a relative link to the install
in service. Directories of the root whose name starts with a dot (``.tools``, ``.python``) hold no
engine. Finished installs are ordered newest first by the marker's modification time.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os

from ansible_collections.volta.serving.plugins.module_utils._venv import fingerprint

MARKER = ".volta-install.json"
CURRENT = "current"


class InstallsError(Exception):
    """A state the engine root must not be in (an unreadable record); the message says what to do."""


def _read_record(path):
    """(the parsed JSON record at *path*, the file's sha256); InstallsError naming the file when it is not a
    JSON object."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        record = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise InstallsError(
            f"the engine install record {path} cannot be read as JSON ({exc}). Why: it marks a finished "
            f"install, and its content says what the install is. Fix: remove {os.path.dirname(path)} "
            "(the next run rebuilds it) or restore the file") from exc
    if not isinstance(record, dict):
        raise InstallsError(f"the engine install record {path} is not a JSON object; remove "
                            f"{os.path.dirname(path)} (the next run rebuilds it)")
    return record, hashlib.sha256(raw).hexdigest()


def _entries(directory):
    """Names in *directory* (sorted), [] when it does not exist."""
    try:
        return sorted(os.listdir(directory))
    except FileNotFoundError:
        return []


def scan_flavour(root, flavour, marker=MARKER):
    """One flavour: {dir, current, finished: [{name, path, mtime, record}] newest first, unfinished: [paths]}."""
    base = os.path.join(root, flavour)
    finished, unfinished = [], []
    for name in _entries(base):
        path = os.path.join(base, name)
        if name == CURRENT or os.path.islink(path) or not os.path.isdir(path):
            continue
        record_path = os.path.join(path, marker)
        if os.path.isfile(record_path):
            record, digest = _read_record(record_path)
            finished.append({"name": name, "path": path, "mtime": os.stat(record_path).st_mtime,
                             "record": record, "sha256": digest})
        elif name.startswith(flavour + "-"):
            unfinished.append(path)
    finished.sort(key=lambda item: (item["mtime"], item["name"]), reverse=True)
    link = os.path.join(base, CURRENT)
    current = os.path.basename(os.readlink(link).rstrip("/")) if os.path.islink(link) else None
    return {"dir": base, "current": current or None, "finished": finished, "unfinished": unfinished}


def scan(root, flavours=(), marker=MARKER):
    """Every flavour directory of *root* (and each of *flavours*, even when missing): {flavour: scan_flavour}."""
    found = [name for name in _entries(root)
             if not name.startswith(".") and os.path.isdir(os.path.join(root, name))]
    return {flavour: scan_flavour(root, flavour, marker) for flavour in sorted(set(found) | set(flavours))}


def view(state):
    """What a role reads of one flavour: current, previous, finished names, their records and the records'
    sha256 (what engine_service records an instance was started on: <install>@<sha256>), unfinished dirs."""
    names = [item["name"] for item in state["finished"]]
    others = [name for name in names if name != state["current"]]
    return {
        "dir": state["dir"],
        "current": state["current"],
        "previous": others[0] if others else None,
        "finished": names,
        "records": {item["name"]: item["record"] for item in state["finished"]},
        "record_sha256": {item["name"]: item["sha256"] for item in state["finished"]},
        "unfinished": list(state["unfinished"]),
    }


def prune_plan(states, installing, keep):
    """Paths to remove, per flavour of *installing* ({flavour: install being installed}): the finished installs
    beyond the *keep* newest besides the one in service and the one being installed, and every unfinished
    ``<flavour>-*`` directory but the one being installed. Sorted; the directory in service is never in it."""
    if keep < 1:
        raise InstallsError(f"keep must be at least 1 (the install to roll back to), got {keep}")
    out = []
    for flavour, install in sorted(installing.items()):
        state = states.get(flavour)
        if state is None:
            continue
        spared = {state["current"], install}
        old = [item["path"] for item in state["finished"] if item["name"] not in spared]
        out += old[keep:]
        out += [path for path in state["unfinished"] if os.path.basename(path) not in spared]
    return sorted(out)


def without(states, removed):
    """*states* as they are once the paths in *removed* are gone (check mode reports that state)."""
    gone = set(removed)
    return {flavour: dict(state, finished=[item for item in state["finished"] if item["path"] not in gone],
                          unfinished=[path for path in state["unfinished"] if path not in gone])
            for flavour, state in states.items()}


def _flavour_fact(root, flavour, state):
    """The local fact of one flavour (the shape engine_service, status.yml and the verifiers read)."""
    current = state["current"]
    mine = state["finished"]
    others = [item["name"] for item in mine if item["name"] != current]
    record = next((item["record"] for item in mine if item["name"] == current), {})
    python = record.get("python") if isinstance(record.get("python"), dict) else {}
    return {
        "current": current,
        "path": f"{root}/{flavour}/{current}" if current else None,
        "previous": others[0] if others else None,
        "installs": [item["name"] for item in mine],
        "version": record.get("version"),
        "python": python.get("version"),
        "torch": record.get("torch"),
        "cuda": record.get("cuda"),
        "patches": record.get("patches", {}),
        "audit": record.get("audit", {}),
        "binary_audit": {item["name"]: _audit_summary(item["record"]) for item in mine},
    }


def _audit_summary(record):
    audit = record.get("binary_audit")
    if isinstance(audit, dict) and "summary" in audit:
        return audit["summary"]
    return "not audited"


def facts(root, states):
    """The volta_engines local fact: {root, engines: {flavour: ...}} for each flavour with a finished install."""
    return {"root": root, "engines": {flavour: _flavour_fact(root, flavour, state)
                                      for flavour, state in sorted(states.items()) if state["finished"]}}


def render(fact):
    """The fact file's text: the JSON the engine role has always written (4-space indent, sorted keys)."""
    return json.dumps(fact, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def audits(states, installing, record_name):
    """For each flavour whose wanted install (*installing*: flavour -> name) is finished: {name, fingerprint (of
    its venv, _venv.fingerprint), recorded (the JSON object in ``<install>/<record_name>``, {} when there is
    none or it cannot be read)}. The record is engine_fixups' (its last audit of that venv)."""
    out = {}
    for flavour, name in sorted(installing.items()):
        item = next((i for i in states.get(flavour, {}).get("finished", []) if i["name"] == name), None)
        if item is None:
            continue
        try:
            with open(os.path.join(item["path"], record_name), encoding="utf-8") as handle:
                recorded = json.load(handle)
        except (OSError, ValueError):
            recorded = {}
        out[flavour] = {"name": name, "fingerprint": fingerprint(os.path.join(item["path"], "venv")),
                        "recorded": recorded if isinstance(recorded, dict) else {}}
    return out


def probe(patterns):
    """{pattern: whether a path matches it} for shell-style globs (the tools and interpreters under the root)."""
    return {pattern: bool(glob.glob(pattern)) for pattern in patterns}


def record_passed(record, kind, version, cuda_arch="", compute_capability=""):
    """Whether an install's record says its smoke test passed for this version and GPU.

    The marker is written only after the smoke test passed, so a record of *version* is a pass; for a
    Python engine the record must also show torch's kernels for *cuda_arch* (when set) and a binary audit
    that passed for *compute_capability* (when set). A record of an older role without them is no pass.
    """
    if not isinstance(record, dict) or str(record.get("version", "")) != str(version):
        return False
    if kind != "python":
        return True
    if cuda_arch and cuda_arch not in (record.get("arch_list") or []):
        return False
    if compute_capability:
        audit = record.get("binary_audit") or {}
        want = "sm_" + str(compute_capability).replace(".", "")
        return audit.get("ok") is True and audit.get("sm") == want
    return True


def audit_current(audit, key):
    """Whether an install's audit record (*audit*: one flavour of :func:`audits`) matches its venv now and the
    fix-up settings *key*: engine_fixups has nothing new to check."""
    audit = audit or {}
    recorded = audit.get("recorded") or {}
    return (audit.get("fingerprint") is not None and recorded.get("fingerprint") == audit["fingerprint"]
            and recorded.get("key") == key)


def unsettled(installs, flavours, specs, key, cuda_arch="", compute_capability=""):
    """The flavours of *flavours* whose wanted install (``specs[flavour]``) the engine role has something to do
    for, in order: not finished, not the one in service, its record shows no passed smoke test for this GPU,
    the pinned sha256 of its download is not the recorded one, or (a Python engine) its audit record does not
    match its venv and *key*. *installs* is the result of the engine_installs read."""
    out = []
    for flavour in flavours:
        spec = specs[flavour]
        engine = (installs.get("engines") or {}).get(flavour) or {}
        record = (engine.get("records") or {}).get(spec["name"]) or {}
        download = spec.get("download") or {}
        settled = (spec["name"] in (engine.get("finished") or []) and engine.get("current") == spec["name"]
                   and record_passed(record, spec["kind"], spec["version"], cuda_arch, compute_capability)
                   and (not download or str(record.get("source_sha256", "")).lower()
                        == str(download.get("sha256", "")).lower())
                   and (spec["kind"] != "python"
                        or audit_current((installs.get("audits") or {}).get(flavour), key)))
        if not settled:
            out.append(flavour)
    return out
