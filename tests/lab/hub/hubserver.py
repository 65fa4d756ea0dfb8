#!/usr/bin/env python3
"""The lab's Hugging Face Hub stand-in: what the real huggingface_hub client calls, served over HTTP.

  hubserver.py [--bind ADDR] [--port 8090] [--cdn-port 8091] [--drop-once SHA256]

Recorded from the real client, huggingface_hub 2.4.0 (hf_api.py, file_download.py,
_snapshot_download.py, utils/_http.py), never from the hub's code:

- ``GET /api/models/{repo}/revision/{rev}`` (HfApi.model_info / repo_info; ``?blobs=true`` for
  files_metadata): ``sha`` (the commit), ``siblings`` [{rfilename, size, blobId, lfs: {sha256,
  size, pointerSize}}], ``gated``. snapshot_download calls it only when the revision is not a
  40-hex commit id.
- ``GET /api/models/{repo}/tree/{rev}?recursive=True&expand=False`` (list_repo_tree, which
  snapshot_download uses to list files): [{type: file, oid, size, path, lfs: {oid, size,
  pointerSize}}]; one page (the client follows a ``Link: rel=next`` header; not needed here).
- ``HEAD|GET /{repo}/resolve/{rev}/{path}`` (get_hf_file_metadata, then http_get): a regular
  file answers 200 with ``ETag`` (its git blob id, quoted), ``X-Repo-Commit`` and
  ``Content-Length``; an LFS file answers 302 to the "CDN" (another origin: the client follows
  redirects that stay on the hub only, utils/_http.py) with ``X-Linked-Etag`` (the sha256,
  quoted), ``X-Linked-Size`` and ``X-Repo-Commit``; the CDN honours ``Range: bytes=N-`` (206),
  which http_get sends to resume a transfer broken inside one run.
- Errors carry ``X-Error-Code`` / ``X-Error-Message`` as hf_raise_for_status reads them:
  ``GatedRepo`` (401, no token), ``Invalid credentials in Authorization header`` (401, wrong
  token), ``RepoNotFound`` (401), ``RevisionNotFound`` and ``EntryNotFound`` (404).
- No Xet headers (``X-Xet-Hash``): the client then downloads over plain HTTP, as it does from a
  mirror without Xet.

``--drop-once SHA256`` closes the connection halfway through the first CDN download of that
blob (the client must resume with a Range request); ``GET /_lab/drop-once/SHA256`` arms the same on a
running hub (a test's step). ``GET /_lab/log`` lists the requests seen
(method, path, Range, Authorization present) for tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hubrepos import GGUF_FILE, LAB_TOKEN, build_repos, entry

# What tests/lab/hub/build writes (labctl mounts tests/lab/.build/hub at /srv/.build/hub, beside this
# directory at /srv/hub): the tiny GGUF and the checkpoints of tests/fixtures/models; without them the
# hub serves neither volta-lab/tiny-gguf nor the checkpoints' repositories.
BUILT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".build", "hub")


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _built():
    """(the GGUF's bytes or None, {checkpoint: {file: bytes}}) of BUILT."""
    gguf = os.path.join(BUILT, GGUF_FILE)
    root = os.path.join(BUILT, "checkpoints")
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    checkpoints = {n: {f: _read(os.path.join(root, n, f)) for f in sorted(os.listdir(os.path.join(root, n)))}
                   for n in names}
    return (_read(gguf) if os.path.exists(gguf) else None), checkpoints


REPOS = build_repos(*_built())
BLOBS = {e["lfs"]["oid"]: c for r in REPOS.values() for cm in r.commits for p, c in cm["files"].items()
         if "lfs" in (e := entry(p, c))}
STATE = {"log": [], "drop": set(), "lock": threading.Lock()}
DATE = "2026-11-01T00:00:00.000Z"


class HubError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class Handler(BaseHTTPRequestHandler):
    server_version = "volta-lab-hub/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet; /_lab/log records requests
        pass

    def do_HEAD(self):
        self._handle(body=False)

    def do_GET(self):
        self._handle(body=True)

    # ------------------------------------------------------------------ plumbing
    def _handle(self, body):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        with STATE["lock"]:
            STATE["log"].append({"method": self.command, "path": path, "port": self.server.server_port,
                                 "range": self.headers.get("Range"), "auth": bool(self.headers.get("Authorization"))})
        try:
            if self.server.cdn:
                return self._cdn(path, body)
            if path == "/_lab/log":
                return self._json(STATE["log"], body)
            if path.startswith("/_lab/drop-once/"):
                with STATE["lock"]:
                    STATE["drop"].add(path.rsplit("/", 1)[1])
                return self._json({"drop_once": sorted(STATE["drop"])}, body)
            if path.startswith("/api/models/"):
                return self._api(path[len("/api/models/"):], body)
            if "/resolve/" in path:
                return self._resolve(path, body)
            raise HubError(404, None, "Not found")
        except HubError as exc:
            payload = json.dumps({"error": exc.message}).encode()
            self.send_response(exc.status)
            if exc.code:
                self.send_header("X-Error-Code", exc.code)
            self.send_header("X-Error-Message", exc.message)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if body:
                self.wfile.write(payload)

    def _json(self, data, body, headers=()):
        payload = json.dumps(data).encode()
        self.send_response(200)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def _repo(self, repo_id):
        repo = REPOS.get(repo_id)
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        if token and token != LAB_TOKEN:
            raise HubError(401, None, "Invalid credentials in Authorization header")
        if repo is None:
            raise HubError(401, "RepoNotFound", "Repository not found")
        if repo.gated and not token:
            raise HubError(401, "GatedRepo", f"Access to model {repo_id} is restricted. You must have access to it "
                           "and be authenticated to access it. Please log in.")
        return repo

    def _commit(self, repo, revision):
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    # ------------------------------------------------------------------ API
    def _api(self, rest, body):
        for kind in ("/revision/", "/tree/"):
            if kind in rest:
                repo_id, revision = rest.split(kind, 1)
                revision = revision.split("/", 1)[0]
                repo = self._repo(repo_id)
                commit = self._commit(repo, revision)
                entries = [entry(p, c) for p, c in sorted(commit["files"].items())]
                if kind == "/tree/":
                    return self._json(entries, body)
                return self._json(self._info(repo, commit, entries), body)
        raise HubError(404, None, "Not found")

    def _info(self, repo, commit, entries):
        blobs = "blobs=true" in (urllib.parse.urlsplit(self.path).query or "")
        siblings = []
        for e in entries:
            sib = {"rfilename": e["path"]}
            if blobs:
                sib.update(size=e["size"], blobId=e["oid"])
                if "lfs" in e:
                    sib["lfs"] = {"sha256": e["lfs"]["oid"], "size": e["lfs"]["size"],
                                  "pointerSize": e["lfs"]["pointerSize"]}
            siblings.append(sib)
        return {"_id": commit["oid"][:24], "id": repo.repo_id, "modelId": repo.repo_id, "sha": commit["oid"],
                "private": False, "gated": "manual" if repo.gated else False, "disabled": False,
                "lastModified": DATE, "createdAt": DATE, "downloads": 0, "likes": 0, "tags": [],
                "library_name": "transformers", "siblings": siblings}

    def _resolve(self, path, body):
        repo_id, rest = path.lstrip("/").split("/resolve/", 1)
        revision, filename = rest.split("/", 1) if "/" in rest else (rest, "")
        repo = self._repo(repo_id)
        commit = self._commit(repo, revision)
        content = commit["files"].get(filename)
        if content is None:
            raise HubError(404, "EntryNotFound", f"{filename} does not exist on {revision}")
        e = entry(filename, content)
        if "lfs" in e:
            host = (self.headers.get("Host") or "127.0.0.1").rsplit(":", 1)[0]
            self.send_response(302)
            self.send_header("Location", f"http://{host}:{self.server.cdn_port}/lfs/{e['lfs']['oid']}")
            self.send_header("X-Repo-Commit", commit["oid"])
            self.send_header("ETag", f'"{e["oid"]}"')
            self.send_header("X-Linked-Etag", f'"{e["lfs"]["oid"]}"')
            self.send_header("X-Linked-Size", str(e["size"]))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        self.send_response(200)
        self.send_header("X-Repo-Commit", commit["oid"])
        self.send_header("ETag", f'"{e["oid"]}"')
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if body:
            self.wfile.write(content)
        return None

    # ------------------------------------------------------------------ CDN
    def _cdn(self, path, body):
        digest = path.rsplit("/", 1)[-1]
        content = BLOBS.get(digest)
        if not path.startswith("/lfs/") or content is None:
            raise HubError(404, None, "Not found")
        start = 0
        rng = self.headers.get("Range") or ""
        if rng.startswith("bytes=") and rng[6:].split("-")[0].isdigit():
            start = int(rng[6:].split("-")[0])
        part = content[start:]
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{digest}"')
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        if not body:
            return
        with STATE["lock"]:
            drop = body and digest in STATE["drop"]
            STATE["drop"].discard(digest)
        if drop:
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(part)


def serve(bind, port, cdn_port, drop=()):
    """Start the CDN (cdn_port) and the hub (port) in threads; 0 picks free ports. Returns (hub, cdn)."""
    STATE["drop"].update(drop)
    cdn = ThreadingHTTPServer((bind, cdn_port), Handler)
    hub = ThreadingHTTPServer((bind, port), Handler)
    for srv, is_cdn in ((hub, False), (cdn, True)):
        srv.daemon_threads = True
        srv.cdn, srv.cdn_port = is_cdn, cdn.server_port
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    return hub, cdn


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--bind", default="0.0.0.0")  # noqa: S104  a lab container's network
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--cdn-port", type=int, default=8091)
    parser.add_argument("--drop-once", action="append", default=[])
    args = parser.parse_args(argv)
    serve(args.bind, args.port, args.cdn_port, args.drop_once)
    print(f"lab hub on {args.bind}:{args.port} (CDN {args.cdn_port}): {', '.join(REPOS)}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
