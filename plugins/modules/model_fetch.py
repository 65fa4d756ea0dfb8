#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_fetch
short_description: Fetch one model's weights at a pinned revision into a versioned directory, verified
description:
  - For a Hugging Face source, lists the repository's files at the pinned commit with the real C(huggingface_hub)
    client (run the task with the interpreter of a venv that has it), keeps those matching C(source.hf.allow_patterns),
    checks the files already in C(<root>/<name>@<revision>) against the sizes, LFS sha256 and git blob ids the hub
    publishes, refuses when the bytes still to download exceed the free space (both numbers in the message), then
    downloads what is missing or corrupt with C(snapshot_download) and verifies every file it wrote.
  - When the disk fills during the download all the same (another writer took the space after the check), the
    partial files are removed, the directory stays unmarked (never taken for complete) and the task fails with
    the bytes still to download, the bytes free, the filesystem and the fix.
  - A file whose size and mtime match the record written after its last verification is not read again unless
    O(full_verify); a rerun with a complete directory makes no request to the hub and changes nothing.
  - For a URL source, downloads one file into C(<root>/<name>@<sha256[:12]>/), resuming a C(.part) file with a
    Range request, and verifies its sha256. A path source is only checked to exist.
  - Progress lines (bytes, rate, ETA) go to O(log) every O(report_every) seconds; run the task with C(async)
    and M(volta.serving.long_step_wait) to see them.
  - After a verified fetch, other directories of the same model beyond the O(keep) newest are removed.
  - The token of a gated repository comes from O(token_file) into the client's E(HF_TOKEN), never from an argument.
  - With O(models) instead of O(name) and O(source), checks every model of the list in one call (check mode only);
    RV(models) holds each one's result, RV(changed_models) names those with something to fetch or remove.
version_added: 0.2.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  name:
    description: The model's name in C(volta_models); part of its directory name. Required without O(models).
    type: str
  source:
    description:
      - The model's source, as in C(volta_models) (one of C(hf), C(url) with C(sha256), C(path)). Required without
        O(models).
    type: dict
  models:
    description:
      - Check several models in one call (check mode only), each with its own C(name), C(source) and C(token_file)
        (as O(name), O(source), O(token_file)); the other options apply to all of them.
    type: list
    elements: dict
  root:
    description: The directory that holds every model's versioned directories.
    type: path
    required: true
  endpoint:
    description: The hub's URL (E(HF_ENDPOINT) for a mirror).
    type: str
    default: https://huggingface.co
  log:
    description: Progress lines are appended here while downloading.
    type: path
  report_every:
    description: Seconds between two progress lines.
    type: float
    default: 30.0
  full_verify:
    description: Hash every file again, even those unchanged since their last verification.
    type: bool
    default: false
  keep:
    description: How many other directories of this model to keep beside the one fetched (newest first).
    type: int
    default: 1
  allow_branch:
    description: Accept a branch or tag as C(source.hf.revision) (unversioned; warned).
    type: bool
    default: false
  reserve_bytes:
    description: Bytes to keep free on the filesystem after the download.
    type: int
    default: 0
  max_workers:
    description: Files downloaded at once.
    type: int
    default: 8
  host:
    description: The host's name, for messages.
    type: str
    default: ""
  token_file:
    description:
      - A file on the host (mode 0600) holding the token of a gated or private repository; the module puts it
        into E(HF_TOKEN) for the client. Never pass a token as an argument.
    type: path
attributes:
  check_mode:
    support: full
    description: Checks files and free space and reports what would be downloaded or removed; changes nothing.
  diff_mode:
    support: none
    description: The result lists the files fetched and the directories removed.
requirements:
  - huggingface_hub (for C(hf) sources), in the interpreter that runs the module
"""

EXAMPLES = r"""
- name: Fetch the tiny model at a pinned commit
  volta.serving.model_fetch:
    name: tiny
    source:
      hf:
        repo: volta-lab/tiny-llama
        revision: 0123456789abcdef0123456789abcdef01234567
        allow_patterns: ["*.json", "*.safetensors"]
    root: /srv/volta/models
    token_file: /srv/volta/models/.tokens/tiny
  vars:
    ansible_python_interpreter: /srv/volta/models/.tools/huggingface_hub-2.4.0/bin/python
"""

RETURN = r"""
path:
  description: What an instance serves (the directory, the downloaded file, or the path).
  type: str
  returned: always (with O(models), in each entry of RV(models))
dir:
  description: The versioned directory (none for a path source).
  type: str
  returned: always (with O(models), in each entry of RV(models))
files:
  description: How many files the model has after filtering.
  type: int
  returned: always (with O(models), in each entry of RV(models))
total_bytes:
  description: The model's size.
  type: int
  returned: always (with O(models), in each entry of RV(models))
fetch:
  description: Each file downloaded (or to download in check mode) and why (missing, size, checksum).
  type: dict
  returned: always (with O(models), in each entry of RV(models))
downloaded_bytes:
  description: Bytes of the files fetched.
  type: int
  returned: always (with O(models), in each entry of RV(models))
free_bytes:
  description: Free bytes on the filesystem of the directory before the download.
  type: int
  returned: always (with O(models), in each entry of RV(models))
pruned:
  description: Directories of older revisions removed (or to remove), with their sizes.
  type: list
  elements: dict
  returned: always (with O(models), in each entry of RV(models))
kept:
  description: Directories of this model kept.
  type: list
  elements: str
  returned: always (with O(models), in each entry of RV(models))
models:
  description: With O(models), each model's result (the return values above) under its name, in the list's order.
  type: dict
  returned: when O(models) is given
changed_models:
  description: With O(models), the names of the models with something to fetch or remove, in the list's order.
  type: list
  elements: str
  returned: when O(models) is given
"""

import os
import shutil
import threading
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.volta.serving.plugins.module_utils import _model as m


def _du(path):
    total = 0
    for top, _dirs, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(top, f)) for f in files if os.path.isfile(os.path.join(top, f)))
    return total


class Progress(threading.Thread):
    """Writes a progress line to the log every *every* seconds from the bytes on disk."""

    def __init__(self, log, name, total, measure, every):
        super().__init__(daemon=True)
        self.log, self.name, self.total, self.measure, self.every = log, name, total, measure, every
        self.stop, self.start_at = threading.Event(), time.monotonic()

    def line(self):
        if self.log:
            try:
                done = min(self.measure(), self.total)
                with open(self.log, "a", encoding="utf-8") as handle:
                    handle.write(m.progress_line(self.name, done, self.total, time.monotonic() - self.start_at) + "\n")
            except OSError:  # a full disk (or a file gone meanwhile) costs a progress line, never the download
                pass

    def run(self):
        self.line()
        while not self.stop.wait(self.every):
            self.line()


def hub_manifest(p, src):
    """{path: {size, sha256|blob}} of the files of the pinned commit that match allow_patterns; and the commit."""
    from huggingface_hub import HfApi  # the venv's real client

    info = HfApi(endpoint=p["endpoint"]).model_info(src["repo"], revision=src["revision"], files_metadata=True)
    entries = [{"path": s.rfilename, "size": s.size, "blob": s.blob_id,
                "lfs": {"size": s.lfs.size, "sha256": s.lfs.sha256} if s.lfs else None} for s in info.siblings]
    return m.manifest_from_tree(m.select_files(entries, src["allow_patterns"])), info.sha


def hub_download(p, src, commit, dest, paths):
    from huggingface_hub import snapshot_download

    escaped = ["".join(f"[{c}]" if c in "*?[" else c for c in path) for path in paths]
    snapshot_download(src["repo"], revision=commit, local_dir=dest, allow_patterns=escaped,
                      endpoint=p["endpoint"], max_workers=p["max_workers"])


def _partial_bytes(dest):
    """Bytes of the client's partial files (``<name>.<etag>.<random>.incomplete``) under dest/.cache."""
    total = 0
    for top, _dirs, files in os.walk(os.path.join(dest, ".cache", "huggingface", "download")):
        total += sum(os.path.getsize(os.path.join(top, f)) for f in files if f.endswith(".incomplete"))
    return total


def _partials_dir(dest):
    return os.path.join(dest, ".cache", "huggingface", "download")


def _fail_if_full(module, p, exc, dest, sizes, partial_dirs, result, *partial_files):
    """A write that found the disk full after the free-space check passed (another writer took the space):
    remove the partial files (they hold the space and are never served), fail with both numbers and the fix.
    The versioned directory has no marker, so it is never taken for a complete one."""
    if not m.is_disk_full(exc):
        return
    victims = list(partial_files)
    for top in partial_dirs:
        for parent, _dirs, files in os.walk(top):
            victims += [os.path.join(parent, f) for f in files if f.endswith(".incomplete")]
    for victim in victims:
        if os.path.isfile(victim):
            os.unlink(victim)
    left = sum(size for path, size in sizes.items()
               if not (os.path.isfile(os.path.join(dest, path)) and os.path.getsize(os.path.join(dest, path)) == size))
    result.update(free_bytes=m.free_bytes(dest))
    module.fail_json(msg=m.disk_full_message(p["host"] or "host", p["name"], dest, left, result["free_bytes"],
                                             m.mount_point(dest)), **result)


def _forget(dest, path):
    """Remove a bad file and the client's record of it: with a record for the same commit, huggingface_hub
    (file_download._hf_hub_download_to_local_dir) returns the file as it is, without checking it."""
    record = os.path.join(dest, ".cache", "huggingface", "download", path + ".metadata")
    for victim in (os.path.join(dest, path), record):
        if os.path.lexists(victim):
            os.unlink(victim)


def fetch_hf(module, p, src, result):
    dest = m.model_dir(p["root"], p["name"], src)
    marker = m.read_marker(dest)
    if marker and marker.get("source") == src and not p["full_verify"]:
        manifest, commit = {k: {x: v[x] for x in ("size", "sha256", "blob") if x in v}
                            for k, v in marker["files"].items()}, src["revision"]
    else:
        manifest, commit = hub_manifest(p, src)
    if not m.COMMIT_RE.match(src["revision"]):
        module.warn(f"model {p['name']}: revision {src['revision']} is a branch or tag (now {commit}); the directory "
                    f"{dest} follows it; pin revision: {commit}")
    states = m.check_files(dest, manifest, marker, p["full_verify"])
    bad = {k: v for k, v in states.items() if v != "ok"}
    result.update(dir=dest, path=dest, files=len(manifest), total_bytes=sum(f["size"] for f in manifest.values()),
                  fetch=bad, downloaded_bytes=sum(manifest[k]["size"] for k in bad))
    if not bad:
        return
    _refuse_if_full(module, p, dest, result)
    result["changed"] = True
    if module.check_mode:
        return
    os.makedirs(dest, exist_ok=True)
    for path, state in bad.items():
        if state != "missing":
            _forget(dest, path)
    progress = Progress(p["log"], p["name"], result["downloaded_bytes"],
                        lambda: sum(os.path.getsize(os.path.join(dest, k)) for k in bad
                                    if os.path.isfile(os.path.join(dest, k))) + _partial_bytes(dest),
                        p["report_every"])
    progress.start()
    try:
        hub_download(p, src, commit, dest, sorted(bad))
    except Exception as exc:  # the client lets a failed write through, as it is or wrapped
        _fail_if_full(module, p, exc, dest, {k: manifest[k]["size"] for k in bad}, [_partials_dir(dest)], result)
        raise
    finally:
        progress.stop.set()
        progress.line()
    after = m.check_files(dest, {k: manifest[k] for k in bad}, None, full=True)
    wrong = {k: v for k, v in after.items() if v != "ok"}
    if wrong:
        module.fail_json(msg=f"{p['host']}: model {p['name']}: after download, {wrong} do not match what the hub "
                         f"publishes for {src['repo']}@{commit}; fix: rerun (bad files are fetched again) or check "
                         "the mirror", **result)
    m.write_marker(dest, m.marker_record(dest, manifest, src, time.time()))


def _refuse_if_full(module, p, dest, result):
    free = m.free_bytes(dest)
    result["free_bytes"] = free
    refusal = m.disk_refusal(p["host"] or "host", p["name"], dest, result["downloaded_bytes"], free,
                             p["reserve_bytes"])
    if refusal:
        module.fail_json(msg=refusal, **result)


def fetch_url(module, p, src, result):
    dest = m.model_dir(p["root"], p["name"], src)
    target = os.path.join(dest, src["file"])
    marker = m.read_marker(dest)
    manifest = {src["file"]: {"size": os.path.getsize(target) if os.path.isfile(target) else -1,
                              "sha256": src["sha256"]}}
    state = m.check_files(dest, manifest, marker, p["full_verify"])[src["file"]]
    result.update(dir=dest, path=target, files=1)
    if state == "ok":
        result["total_bytes"] = manifest[src["file"]]["size"]
        return
    head = open_url(src["url"], method="HEAD", timeout=60)
    size = int(head.headers.get("Content-Length") or 0)
    part = target + ".part"
    have = os.path.getsize(part) if os.path.isfile(part) else 0
    result.update(total_bytes=size, fetch={src["file"]: state if state != "size" else "missing"},
                  downloaded_bytes=max(0, size - have))
    _refuse_if_full(module, p, dest, result)
    result["changed"] = True
    if module.check_mode:
        return
    os.makedirs(dest, exist_ok=True)
    progress = Progress(p["log"], p["name"], size, lambda: os.path.getsize(part) if os.path.isfile(part) else 0,
                        p["report_every"])
    progress.start()
    try:
        _download(src["url"], part, have)
    except Exception as exc:
        _fail_if_full(module, p, exc, dest, {src["file"]: size}, [], result, part)
        raise
    finally:
        progress.stop.set()
        progress.line()
    got = m.digest(part, "sha256")
    if got != src["sha256"]:
        os.unlink(part)
        module.fail_json(msg=f"{p['host']}: model {p['name']}: {src['url']} has sha256 {got}, not {src['sha256']}; "
                         "the file was removed; fix: correct sha256 or the URL", **result)
    os.replace(part, target)
    manifest[src["file"]]["size"] = os.path.getsize(target)
    m.write_marker(dest, m.marker_record(dest, manifest, src, time.time()))


def _download(url, part, have):
    """Append to *part* from byte *have* (Range); a server that ignores Range restarts it."""
    with open_url(url, headers={"Range": f"bytes={have}-"} if have else {}, timeout=60) as resp:
        mode = "ab" if have and resp.status == 206 else "wb"
        with open(part, mode) as out:
            shutil.copyfileobj(resp, out, m.CHUNK)


def prune(module, p, src, result):
    current = result["dir"]
    if not current or not os.path.isdir(p["root"]):
        return
    entries = []
    for entry in sorted(os.listdir(p["root"])):
        path = os.path.join(p["root"], entry)
        if entry.startswith(p["name"] + "@") and os.path.isdir(path):
            marker = m.read_marker(path) or {}
            entries.append({"path": path, "fetched_at": marker.get("fetched_at") or os.path.getmtime(path)})
    kept, removed = m.prune_plan(entries, current, p["keep"])
    result["kept"] = [e["path"] for e in kept]
    result["pruned"] = [{"path": e["path"], "bytes": _du(e["path"])} for e in removed]
    if removed:
        result["changed"] = True
        if not module.check_mode:
            for e in removed:
                shutil.rmtree(e["path"])


ARGS = {
    "name": {"type": "str"},
    "source": {"type": "dict"},
    "models": {"type": "list", "elements": "dict"},
    "root": {"type": "path", "required": True},
    "endpoint": {"type": "str", "default": "https://huggingface.co"},
    "log": {"type": "path"},
    "report_every": {"type": "float", "default": 30.0},
    "full_verify": {"type": "bool", "default": False},
    "keep": {"type": "int", "default": 1},
    "allow_branch": {"type": "bool", "default": False},
    "reserve_bytes": {"type": "int", "default": 0},
    "max_workers": {"type": "int", "default": 8},
    "host": {"type": "str", "default": ""},
    "token_file": {"type": "path"},
}


def run(module):
    p = module.params
    result = {"changed": False, "dir": None, "path": None, "files": 0, "total_bytes": 0, "fetch": {},
              "downloaded_bytes": 0, "free_bytes": None, "pruned": [], "kept": []}
    try:
        src = m.check_source(p["name"], p["source"], p["allow_branch"])
    except m.ModelError as exc:
        module.fail_json(msg=f"{p['host'] or 'host'}: {exc}", **result)
    if src["kind"] == "path":
        result["path"] = src["path"]
        if not os.path.exists(src["path"]):
            module.fail_json(msg=f"{p['host'] or 'host'}: model {p['name']}: {src['path']} does not exist; a path "
                             "source is only checked, never fetched; fix: mount or copy it there", **result)
        return result
    if p["token_file"]:  # empty: no token
        with open(p["token_file"], encoding="utf-8") as handle:
            os.environ["HF_TOKEN"] = handle.read().strip()  # the client reads it; never an argument or a result
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    (fetch_hf if src["kind"] == "hf" else fetch_url)(module, p, src, result)
    prune(module, p, src, result)
    return result


def run_one(module):
    try:
        return run(module)
    except Exception as exc:
        module.fail_json(msg=f"{module.params['host'] or 'host'}: model {module.params['name']}: "
                         f"{m.explain(exc)}")


def check_all(module):
    """Check each model of O(models) in turn, as run() checks one (its name, source and token file)."""
    if not module.check_mode:
        module.fail_json(msg="models checks several models in check mode only; fetch each one with name and source")
    checks, shared = {}, dict(module.params)
    for entry in module.params["models"]:
        lacks = [k for k in ("name", "source") if not entry.get(k)]
        if lacks:
            module.fail_json(msg=f"an entry of models lacks {', '.join(lacks)}: give name, source and token_file")
        module.params = {**shared, "models": None, "name": entry["name"], "source": entry["source"],
                         "token_file": entry.get("token_file") or None}
        os.environ.pop("HF_TOKEN", None)  # one model's token never reaches the next one's client
        checks[entry["name"]] = run_one(module)
    module.params = shared
    changed = [name for name, check in checks.items() if check["changed"]]
    return {"changed": bool(changed), "models": checks, "changed_models": changed}


def main():
    module = AnsibleModule(argument_spec=ARGS, supports_check_mode=True,
                           mutually_exclusive=[("models", "name"), ("models", "source")],
                           required_one_of=[("models", "name")], required_by={"name": "source"})
    module.exit_json(**(check_all(module) if module.params["models"] is not None else run_one(module)))


if __name__ == "__main__":
    main()
