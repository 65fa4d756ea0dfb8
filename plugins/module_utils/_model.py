# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Model sources (``volta_models``): validation, served paths, file checks, disk, progress, retention.

Pure Python, no Ansible imports and no huggingface_hub: the module volta.serving.model_fetch
drives the real client; everything it decides is here, so unit tests import it directly.

A source is one of:
  {hf: {repo: ORG/NAME, revision: <40-hex commit>, allow_patterns: [...]}}   (token: from Vault,
      given to the client through the environment, never here)
  {url: https://..., sha256: <64 hex>}        one file (a GGUF)
  {path: /local/or/nfs}                        only checked

Served paths (the same on the controller and the host, computed from the inventory alone):
  hf   <root>/<name>@<revision>
  url  <root>/<name>@<sha256[:12]>/<file name>
  path the path itself
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import ipaddress
import json
import os
import posixpath
import re
import urllib.parse

COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
KINDS = ("hf", "url", "path")
MARKER = ".volta-model.json"
# The role volta.serving.model's default model_root (volta_models_root when set).
DEFAULT_ROOT = "/srv/volta/models"
# The role's default model_hf_endpoint (the hub itself; a mirror is set in the inventory).
DEFAULT_ENDPOINT = "https://huggingface.co"
CHUNK = 8 * 1024 * 1024


class ModelError(Exception):
    """A problem with a model source, worded 'what / why / fix'."""


def _fail(name, what, why, fix):
    raise ModelError(f"model {name}: {what}; {why}; fix: {fix}")


# ---------------------------------------------------------------- the hub's transport
def is_loopback(host):
    """True for a name or address of this machine only: localhost (and *.localhost), 127.0.0.0/8, ::1."""
    host = (host or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_transport_problem(endpoint):
    """Why a model's token must not be sent to *endpoint* (model_hf_endpoint), or None.

    The token goes in an Authorization header: over plain http anyone on the path reads it, so only
    https carries it, or http to this machine itself (a mirror or a test hub on loopback).
    """
    parts = urllib.parse.urlsplit(str(endpoint or ""))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "is not an http(s) URL"
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return "is plain http to a host other than this machine"
    return None


# ---------------------------------------------------------------- sources
def _check_hf(name, hf, allow_branch):
    if not isinstance(hf, dict) or not REPO_RE.match(str(hf.get("repo", ""))):
        _fail(name, f"hf.repo is {hf.get('repo') if isinstance(hf, dict) else hf!r}",
              "a Hugging Face repository is ORG/NAME", "write hf: {repo: ORG/NAME, revision: <commit>}")
    rev = str(hf.get("revision", ""))
    if not COMMIT_RE.match(rev) and not allow_branch:
        _fail(name, f"hf.revision is {rev!r}, not a commit id",
              "a branch or tag moves, so reruns could serve different weights and no directory is versioned",
              f"pin the 40-hex commit (the hub's page of {hf['repo']} lists it under 'Files and versions'; "
              "or set model_allow_branch: true to resolve it at each run)")
    patterns = hf.get("allow_patterns", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
        _fail(name, "hf.allow_patterns is not a list of glob patterns", "it filters the repository's files",
              "write allow_patterns: ['*.safetensors', '*.json']")
    return {"kind": "hf", "repo": hf["repo"], "revision": rev, "allow_patterns": list(patterns)}


def _check_url(name, source):
    url, digest = str(source.get("url", "")), str(source.get("sha256", "")).lower()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or not posixpath.basename(parts.path):
        _fail(name, f"url {url!r} is not an http(s) URL of a file", "a url source downloads one file",
              "write url: https://HOST/PATH/FILE.gguf")
    if not SHA256_RE.match(digest):
        _fail(name, "sha256 is missing or not 64 hex digits", "every download is verified by its sha256",
              "add sha256: <the file's sha256> (sha256sum FILE)")
    return {"kind": "url", "url": url, "sha256": digest, "file": posixpath.basename(parts.path)}


def check_source(name, source, allow_branch=False):
    """The normalised source (a dict with ``kind``) of model *name*, or ModelError."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        _fail(name, "the name cannot be a directory name", "it names <root>/<name>@<revision>",
              "use letters, digits, '.', '_', '-'")
    if not isinstance(source, dict):
        _fail(name, f"the source is {type(source).__name__}", "a source is a mapping", "write hf:, url: or path:")
    kinds = [k for k in KINDS if k in source]
    if len(kinds) != 1:
        _fail(name, f"it names {kinds or 'no'} source kind(s)", "a model comes from exactly one place",
              "write exactly one of hf: {...}, url: ... (with sha256:) or path: ...")
    if kinds == ["hf"]:
        return _check_hf(name, source["hf"], allow_branch)
    if kinds == ["url"]:
        return _check_url(name, source)
    path = source["path"]
    if not isinstance(path, str) or not path.startswith("/"):
        _fail(name, f"path {path!r} is not absolute", "the engine runs from /", "write path: /srv/...")
    return {"kind": "path", "path": path.rstrip("/") or "/"}


def model_dir(root, name, src):
    """The directory the layer owns for a source (None for path sources)."""
    if src["kind"] == "hf":
        return posixpath.join(root, f"{name}@{src['revision']}")
    if src["kind"] == "url":
        return posixpath.join(root, f"{name}@{src['sha256'][:12]}")
    return None


def served_path(root, name, src):
    """What an instance with model_source: name serves (the ``model`` of the serving plan)."""
    if src["kind"] == "url":
        return posixpath.join(model_dir(root, name, src), src["file"])
    return model_dir(root, name, src) or src["path"]


def resolve_instances(instances, models, root, allow_branch=False):
    """Instances with ``model`` filled from ``model_source`` (which is removed); errors name the instance."""
    out = []
    for inst in instances or []:
        if not isinstance(inst, dict) or "model_source" not in inst:
            out.append(inst)
            continue
        new = dict(inst)
        ref = new.pop("model_source")
        who = f"instance {new.get('name', '?')}"
        _known_source(who, ref, models)
        path = served_path(root, ref, check_source(ref, models[ref], allow_branch))
        if new.get("model") not in (None, "", path):
            raise ModelError(f"{who}: model {new['model']!r} and model_source {ref!r} ({path}) disagree; "
                             "the layer serves the source's directory; fix: drop model or model_source")
        new["model"] = path
        out.append(new)
    return out


def _known(models):
    """The model names of volta_models for a message: names only (never a source: it may hold a token)."""
    return ", ".join(sorted(str(name) for name in models)) if isinstance(models, dict) and models else "none"


def _known_source(who, ref, models):
    """ModelError unless *ref* (an instance's model_source) names a model of volta_models."""
    if not isinstance(ref, str):
        raise ModelError(f"{who}: model_source {ref!r} is not a model name; it names one entry of volta_models "
                         f"(known: {_known(models)}); fix: write model_source: <name>, e.g. model_source: qwen")
    if not isinstance(models, dict) or ref not in models:
        raise ModelError(f"{who}: model_source {ref!r} is not in volta_models; known: {_known(models)}; "
                         "fix: add it to volta_models or correct it")


def needed_models(instances, models, names=None):
    """The names of the models to fetch: *names* when given, else those the instances refer to (in order)."""
    if not names:
        for inst in instances or []:
            if isinstance(inst, dict) and not isinstance(inst.get("model_source"), (str, type(None))):
                _known_source(f"instance {inst.get('name', '?')}", inst["model_source"], models)
    wanted = list(names) if names else [i["model_source"] for i in instances or []
                                        if isinstance(i, dict) and i.get("model_source")]
    unknown = [str(n) for n in wanted if not isinstance(n, str) or not isinstance(models, dict) or n not in models]
    if unknown:
        raise ModelError(f"models {', '.join(unknown)} are not in volta_models; fix: define them or drop them")
    return list(dict.fromkeys(wanted))


# ---------------------------------------------------------------- files
def select_files(entries, allow_patterns):
    """Entries whose path matches one of *allow_patterns* (all without patterns); 'dir/' means 'dir/*'.

    The same rule as huggingface_hub's filter_repo_objects (fnmatch on the path).
    """
    if not allow_patterns:
        return list(entries)
    pats = [p + "*" if p.endswith("/") else p for p in allow_patterns]
    return [e for e in entries if any(fnmatch.fnmatch(e["path"], p) for p in pats)]


def manifest_from_tree(entries):
    """{path: {size, sha256 | blob}} from the hub's file entries (tree API or model_info siblings)."""
    out = {}
    for e in entries:
        lfs = e.get("lfs") or None
        if lfs:
            out[e["path"]] = {"size": int(lfs["size"]), "sha256": lfs["sha256"]}
        else:
            out[e["path"]] = {"size": int(e["size"]), "blob": e["blob"]}
    return out


def digest(path, kind):
    """The sha256 (*kind* 'sha256') or git blob id (*kind* 'blob') of a file, streamed."""
    if kind == "sha256":
        algo = hashlib.sha256()
    else:
        algo = hashlib.sha1(b"blob %d\0" % os.path.getsize(path))  # noqa: S324  git's object id, as the hub publishes it
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            algo.update(chunk)
    return algo.hexdigest()


def _stat(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def check_file(dest, path, want, seen=None, full=False):
    """'ok', 'missing', 'size' or 'checksum' for one file; *seen* is the marker's record of it.

    A file whose size and mtime match what the marker recorded after its last verification is
    not read again (a 150 GB checkpoint is not re-hashed on every run) unless *full*.
    """
    st = _stat(posixpath.join(dest, path))
    if st is None:
        return "missing"
    if st["size"] != want["size"]:
        return "size"
    same = seen and all(seen.get(k) == v for k, v in st.items()) and all(seen.get(k) == v for k, v in want.items())
    if same and not full:
        return "ok"
    kind = "sha256" if "sha256" in want else "blob"
    return "ok" if digest(posixpath.join(dest, path), kind) == want[kind] else "checksum"


def check_files(dest, manifest, marker=None, full=False):
    """{path: state} for every file of *manifest* (see check_file)."""
    seen = (marker or {}).get("files", {})
    return {p: check_file(dest, p, want, seen.get(p), full) for p, want in sorted(manifest.items())}


def read_marker(dest):
    try:
        with open(posixpath.join(dest, MARKER), encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return None


def marker_record(dest, manifest, source, fetched_at):
    """The marker written after a verified fetch: the source and each file's checksum, size and mtime."""
    files = {}
    for path, want in manifest.items():
        files[path] = dict(want, **(_stat(posixpath.join(dest, path)) or {}))
    return {"source": source, "fetched_at": fetched_at, "files": files}


def write_marker(dest, record):
    tmp = posixpath.join(dest, MARKER + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
    os.replace(tmp, posixpath.join(dest, MARKER))


# ---------------------------------------------------------------- disk and progress
def human(n):
    """1536 -> '1.5 KiB'; bytes in binary units, one decimal."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def free_bytes(path):
    """Free bytes (for an unprivileged writer's view: f_bavail) of the filesystem holding *path* or its parent."""
    while not os.path.exists(path):
        path = posixpath.dirname(path) or "/"
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def disk_refusal(host, name, dest, need, free, reserve=0):
    """None when *need* bytes (+ *reserve*) fit in *free*, else the refusal with both numbers."""
    if need + reserve <= free:
        return None
    return (f"{host}: model {name}: {human(need)} ({need} bytes) to download into {dest}, but only {human(free)} "
            f"({free} bytes) free{f' beyond the {human(reserve)} kept free' if reserve else ''}; nothing was "
            "downloaded; fix: free space, point model_root at a larger filesystem, or lower model_keep")


def is_disk_full(exc):
    """True when *exc*, or an exception it was raised from, is a write that found the disk full (ENOSPC)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "No space left on device" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def mount_point(path):
    """The mount point of the filesystem holding *path* (or its nearest existing parent)."""
    path = posixpath.abspath(path)
    while not os.path.exists(path):
        path = posixpath.dirname(path)
    while not os.path.ismount(path):
        path = posixpath.dirname(path)
    return path


def disk_full_message(host, name, dest, left, free, mount):
    """The failure of a download that filled the disk after the free-space check passed: both numbers, the fix."""
    return (f"{host}: model {name}: the disk filled during the download into {dest} (No space left on device): "
            f"{human(left)} ({left} bytes) still to download, but only {human(free)} ({free} bytes) free on {mount}; "
            f"the partial files were removed and {dest} is not marked complete, so nothing serves it and the next "
            "run fetches what is missing; the revision in service is untouched; fix: free space on "
            f"{mount} (or point model_root at a larger filesystem, or lower model_keep), then rerun")


def progress_line(name, done, total, seconds):
    """'name: 1.2 GiB of 3.4 GiB (35%), 120.0 MiB/s, ETA 18s'."""
    rate = done / seconds if seconds > 0 else 0.0
    pct = 100 * done // total if total else 100
    eta = f"ETA {_duration((total - done) / rate)}" if rate > 0 and total > done else "ETA -"
    return f"{name}: {human(done)} of {human(total)} ({pct}%), {human(rate)}/s, {eta}"


def _duration(seconds):
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


# ---------------------------------------------------------------- retention
def prune_plan(entries, current, keep):
    """(kept, removed) among the directories of one model.

    *entries*: [{path, fetched_at}] of every <root>/<name>@* directory; *current*: the one in
    service (always kept); *keep*: how many others to keep, newest first.
    """
    others = sorted((e for e in entries if e["path"] != current), key=lambda e: e.get("fetched_at") or 0,
                    reverse=True)
    kept = [e for e in entries if e["path"] == current] + others[: max(0, int(keep))]
    return kept, others[max(0, int(keep)):]


# ---------------------------------------------------------------- the client's errors
# huggingface_hub's exception classes (utils/_errors.py) -> why and fix; by class name, so that this
# module never imports the client. A wrong token is a plain HfHubHTTPError with status 401 and the
# hub's message "Invalid credentials in Authorization header".
_EXPLAIN = {
    "GatedRepoError": ("the repository is gated and the request had no token with access",
                       "give the model a token (hf.token, from Vault) of an account that was granted access"),
    "RepositoryNotFoundError": ("the hub knows no such repository (or hides a private one from this token)",
                                "check hf.repo and the token"),
    "RevisionNotFoundError": ("the repository has no such revision", "pin a commit id the repository has"),
    "EntryNotFoundError": ("a file listed by the hub is missing at that revision", "check allow_patterns"),
    "LocalEntryNotFoundError": ("the hub could not be reached", "check model_hf_endpoint and the network"),
    "ModuleNotFoundError": ("the huggingface_hub client is not in the interpreter that ran the module",
                            "run it with the venv the role volta.serving.model installs (ansible_python_interpreter)"),
}


def explain(exc):
    """One line for an exception of the client (or the network): what, why, fix. Never contains a token."""
    name = type(exc).__name__
    first = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())[:300]
    if name in _EXPLAIN:
        why, fix = _EXPLAIN[name]
        return f"{first}; {why}; fix: {fix}"
    if "401" in first or "Invalid credentials" in str(exc):
        return f"{first}; the hub refused the token; fix: replace the model's token (hf.token) with a valid one"
    return f"{name}: {first}; fix: check model_hf_endpoint, the network and the source"


def public_source(source):
    """The source without its token (what may reach a module argument, a result or a marker)."""
    if isinstance(source, dict) and isinstance(source.get("hf"), dict):
        return dict(source, hf={k: v for k, v in source["hf"].items() if k != "token"})
    return source


def model_plan(instances, models, root, names=None, allow_branch=False, endpoint=None, lab=False):
    """What the role fetches: [{name, kind, source (no token), token (bool), dir, path}] in order.

    With *endpoint* (model_hf_endpoint), a model with a token is refused when the token would go to it over
    plain http (token_transport_problem): the model layer's client sends it with every request. *lab*
    (volta_lab): the lab's stand-in hub serves plain http to its stand-in token, which is allowed there.
    """
    out = []
    for name in needed_models(instances, models, names):
        src = check_source(name, models[name], allow_branch)
        hf = models[name].get("hf") if isinstance(models[name], dict) else None
        problem = token_transport_problem(endpoint) if endpoint is not None and isinstance(hf, dict) else None
        if problem and ((hf.get("token") and not lab) or problem == "is not an http(s) URL"):
            _fail(name, f"model_hf_endpoint {endpoint!r} {problem}",
                  "the client reads the hub there and sends the model's token (hf.token) in an Authorization "
                  "header with every request; over plain http anyone on the network path reads it",
                  "use the https address of the hub or mirror (https://huggingface.co is the default), or a mirror "
                  "on the host itself (http://127.0.0.1:PORT)")
        out.append({"name": name, "kind": src["kind"], "source": public_source(models[name]),
                    "token": bool(isinstance(hf, dict) and hf.get("token")),
                    "dir": model_dir(root, name, src), "path": served_path(root, name, src)})
    return out


def token_path(root, name):
    """Where the token of model *name* is kept on the host (the role writes it, model_fetch reads it)."""
    return f"{root.rstrip('/')}/.tokens/{name}"


def check_entries(plan, root):
    """What model_fetch needs of each planned model: name, source and token file ('' without a token)."""
    return [{"name": e["name"], "source": e["source"], "token_file": token_path(root, e["name"]) if e["token"] else ""}
            for e in plan]


def token_files(plan, models, root):
    """The token file of each planned model, as entries of volta.serving.files: the token (0600, secret) of a
    model that has one, removed for one that has none. The role writes the two kinds in separate tasks,
    the first with no_log."""
    out = []
    for entry in plan:
        path = token_path(root, entry["name"])
        if entry["token"]:
            out.append({"path": path, "content": str(models[entry["name"]]["hf"]["token"]), "mode": "0600",
                        "secret": True})
        else:
            out.append({"path": path, "state": "absent"})
    return out


# ---------------------------------------------------------------- switching back
def on_model(instances, name, model):
    """The plan's *instances* with instance *name* serving *model* instead (model and its argv element).

    Used to put an instance back on the model revision it served before when it fails its health
    check on a new one: only the model path changes, every other setting stays as planned.
    """
    out = []
    for inst in instances:
        old = inst.get("model")
        if inst.get("name") != name or old == model:
            out.append(inst)
            continue
        out.append(dict(inst, model=model, argv=[model if arg == old else arg for arg in inst.get("argv") or []]))
    return out
