# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A hub model's facts before it is downloaded: config.json and the weights' size from the hub.

Preflight reads what an instance's ``model_source`` will serve before the model layer downloads
anything, so the model rules (heads vs tensor_parallel, max_model_len, quantization, MLA, fit) can
refuse a wrong checkpoint before any change. What is read, over HTTP(S) with Ansible's open_url
(no huggingface_hub on the host yet), in the shape of _model_facts.model_facts:

- ``GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true``: the files of the commit and
  their sizes (``siblings``: ``rfilename``, ``size``, ``lfs.size``), the same metadata the
  huggingface_hub client reads (HfApi.model_info with files_metadata=True);
- ``GET {endpoint}/{repo}/resolve/{revision}/{file}`` for the small JSON files among the files the
  model's ``allow_patterns`` select: config.json, tokenizer_config.json and a sharded checkpoint's
  index (whose ``metadata.total_size`` is the weights' size, as on the host).

A token goes in ``Authorization: Bearer`` to the endpoint's own origin only (never to the host a
redirect points at, never over plain http except to loopback); it never appears in a result or a
message. Any failure
(network, 401 for a gated repository, 404) leaves ``exists`` false and says why in ``hub_error``;
the rules then warn that the checks wait for the download (rule model-hub-unread).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse

from ansible_collections.volta.serving.plugins.module_utils import _model, _model_facts

DEFAULT_TIMEOUT = 30


def _quote(text):
    return urllib.parse.quote(text, safe="/")


def info_url(endpoint, repo, revision):
    return f"{endpoint.rstrip('/')}/api/models/{_quote(repo)}/revision/{_quote(revision)}?blobs=true"


def file_url(endpoint, repo, revision, path):
    return f"{endpoint.rstrip('/')}/{_quote(repo)}/resolve/{_quote(revision)}/{_quote(path)}"


# Redirects a read follows before it gives up (huggingface_hub's transports follow as many as 20 or 30).
MAX_REDIRECTS = 10
REDIRECT_CODES = (301, 302, 303, 307, 308)


def origin(url):
    """``(scheme, host, port)`` of *url*: the token goes to the endpoint's origin only."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


def _read_answer(answer, url, limit):
    try:
        data = answer.read(limit + 1)
    finally:
        answer.close()
    if len(data) > limit:
        raise ValueError(f"{url} answers more than {limit} bytes")
    return data


def urllib_reader(token=None, timeout=DEFAULT_TIMEOUT, limit=_model_facts.CONFIG_MAX_BYTES, endpoint=None):
    """``read(url) -> bytes`` with open_url, at most *limit* bytes; redirects (GET only) followed here.

    The token goes to the origin of *endpoint* (model_hf_endpoint; without one, of the URL read) and to
    no other: the hub redirects a file to its CDN or LFS storage with a signed URL, which needs no token.
    That is what huggingface_hub does (src/huggingface_hub/file_download.py, _get_metadata_or_catch_error,
    read at commit f7c9b7dfd5e5ee0eff8d936e17459771a578e47b: "If url domain is different => we are
    downloading from a CDN => url is signed => don't send auth", and it drops the authorization header);
    its transports, requests and httpx, also drop Authorization on a redirect to another host), while
    open_url's redirect handler copies every header to wherever the answer points. A token is refused
    over plain http except to this machine (_model.token_transport_problem), before any connection.
    """
    # Imported here, not above: ansible.module_utils.urls pulls in ssl, http.client and cryptography,
    # and the controller's model_plan filter loads this file in every task worker that reads the
    # model plan without ever opening a URL.
    from ansible.module_utils.urls import open_url

    def read(url):
        home = origin(endpoint or url)
        problem = _model.token_transport_problem(endpoint or url) if token else None
        if problem:
            raise ValueError(f"the model's token is not sent: model_hf_endpoint {endpoint or url} {problem}, "
                             "where anyone on the path could read it; use an https endpoint")
        for _hop in range(MAX_REDIRECTS + 1):
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise ValueError(f"{url} is not an http(s) URL (model_hf_endpoint or a redirect of it)")
            headers = {"Authorization": f"Bearer {token}"} if token and origin(url) == home else {}
            try:
                answer = open_url(url, headers=headers, timeout=timeout, http_agent="volta.serving-model-facts",
                                  follow_redirects="none")
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location") if exc.headers else None
                if exc.code not in REDIRECT_CODES or not location:
                    raise
                exc.close()
                url = urllib.parse.urljoin(url, location)
                continue
            return _read_answer(answer, url, limit)
        raise ValueError(f"more than {MAX_REDIRECTS} redirects from {endpoint or 'the hub'}")

    return read


def describe_error(exc):
    """One line for a failed hub read; the hub's own X-Error-Message when it sent one."""
    if isinstance(exc, urllib.error.HTTPError):
        detail = exc.headers.get("X-Error-Message") if exc.headers else None
        hint = {401: "a gated or private repository needs hf.token with access",
                403: "the token has no access to this repository",
                404: "no such repository, revision or file"}.get(exc.code, "the hub refused the request")
        return f"HTTP {exc.code} {detail or exc.reason} ({hint})"
    if isinstance(exc, urllib.error.URLError):
        return f"the hub cannot be reached: {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


def _files(info):
    """[{path, size}] of the commit's files from a model_info answer with blobs."""
    out = []
    for sib in info.get("siblings") or []:
        if not isinstance(sib, dict) or not isinstance(sib.get("rfilename"), str):
            continue
        lfs = sib.get("lfs") if isinstance(sib.get("lfs"), dict) else {}
        size = lfs.get("size", sib.get("size"))
        out.append({"path": sib["rfilename"], "size": size if isinstance(size, int) else None})
    return out


def _json_file(read, url, name):
    try:
        data = json.loads(read(url).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"{name} from the hub is not JSON: {exc}"
    return data, None


def _weights(facts, read, urls, files):
    """The weights' size: the index's total_size when the files include one, else the files' sizes."""
    names = {f["path"] for f in files}
    for index in _model_facts.INDEX_FILES:
        if index in names:
            data, _error = _json_file(read, urls(index), index)
            total = (data or {}).get("metadata", {}).get("total_size") if isinstance(data, dict) else None
            if isinstance(total, int) and not isinstance(total, bool) and total > 0:
                facts.update(weights_bytes=total, weights_from=index)
                break
    top = [f for f in files if "/" not in f["path"] and f["path"].endswith(_model_facts.WEIGHT_SUFFIXES)]
    facts["weight_files"] = len(top)
    if facts["weights_bytes"] is None and top and all(f["size"] is not None for f in top):
        facts.update(weights_bytes=sum(f["size"] for f in top), weights_from="files")


def hub_facts(path, endpoint, repo, revision, allow_patterns=(), read=None):
    """The facts of *path* (where the model will be) read from the hub; see the module docstring."""
    facts = _model_facts.empty_facts(path)
    facts["read_from"] = "hub"
    read = read or urllib_reader()

    def urls(name):
        return file_url(endpoint, repo, revision, name)

    try:
        if not isinstance(endpoint, str) or urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
            raise ValueError(f"model_hf_endpoint {endpoint!r} is not an http(s) URL")
        info = json.loads(read(info_url(endpoint, repo, revision)).decode("utf-8"))
        if not isinstance(info, dict):
            raise ValueError("the hub's model information is not a JSON object")
        files = _model.select_files(_files(info), list(allow_patterns or []))
        names = {f["path"] for f in files}
        facts.update(exists=True, kind="directory")
        if _model_facts.CONFIG_FILE in names:
            config, error = _json_file(read, urls(_model_facts.CONFIG_FILE), _model_facts.CONFIG_FILE)
            facts["config"] = config if isinstance(config, dict) else None
            facts["config_error"] = error or (None if isinstance(config, dict) else "config.json is not a JSON object")
        else:
            facts["config_error"] = (f"{_model_facts.CONFIG_FILE} is not among the files the source fetches "
                                     f"({'allow_patterns ' + ', '.join(allow_patterns) if allow_patterns else 'none'})")
        if _model_facts.TOKENIZER_CONFIG_FILE in names:
            tok, _error = _json_file(read, urls(_model_facts.TOKENIZER_CONFIG_FILE), _model_facts.TOKENIZER_CONFIG_FILE)
            length = tok.get("model_max_length") if isinstance(tok, dict) else None
            facts["tokenizer_max_length"] = length if isinstance(length, int) and not isinstance(length, bool) else None
        _weights(facts, read, urls, files)
    except Exception as exc:  # every failure becomes a fact (hub_error), never a crash
        fresh = _model_facts.empty_facts(path)
        fresh.update(read_from="hub", hub_error=f"{repo}@{revision[:12]}: {describe_error(exc)}")
        return fresh
    return facts


def preflight_reads(instances, models, root, endpoint):
    """What preflight reads: ``{'paths': [...], 'hub': [...], 'pending': [...]}`` from the inventory alone.

    *paths*: every instance's model, with a model_source turned into its served path; *hub*: for
    each hf source an instance uses, ``{path, endpoint, repo, revision, allow_patterns, token}``;
    *pending*: the served paths of url sources (one file, checked against its sha256 when the model
    layer downloads it): not on the host yet is not an error for them. Never raises: a source the
    serving plan will refuse (unknown, malformed) is left out here.
    """
    root = root or _model.DEFAULT_ROOT
    endpoint = endpoint or _model.DEFAULT_ENDPOINT
    paths, hub, pending, seen = [], [], [], set()
    if not isinstance(root, str):
        # No served path can be built (the settings play refuses model_root); only the plain model paths are read.
        instances = [i for i in instances if isinstance(i, dict) and i.get("model_source") is None] if isinstance(
            instances, list) else []
    for inst in instances if isinstance(instances, list) else []:
        if not isinstance(inst, dict):
            continue
        ref = inst.get("model_source")
        source = (models or {}).get(ref) if isinstance(ref, str) and isinstance(models, dict) else None
        if ref is None:
            paths.append(inst.get("model") if isinstance(inst.get("model"), str) else "")
            continue
        try:
            src = _model.check_source(ref, source, allow_branch=True)
        except _model.ModelError:
            continue
        path = _model.served_path(root, ref, src)
        paths.append(path)
        if src["kind"] == "url" and path not in pending:
            pending.append(path)
        if src["kind"] == "hf" and path not in seen:
            seen.add(path)
            hub.append({"path": path, "endpoint": endpoint, "repo": src["repo"], "revision": src["revision"],
                        "allow_patterns": src["allow_patterns"], "token": str(source["hf"].get("token") or "")})
    return {"paths": paths, "hub": hub, "pending": pending}


def gather(paths, hub=(), timeout=DEFAULT_TIMEOUT, reader=urllib_reader, pending=()):
    """_model_facts.gather for *paths*, with the *hub* entries whose path is not on the host read from the hub.

    A *pending* path (the model layer downloads it later in the run) that is not there yet is
    marked ``pending`` rather than missing.
    """
    out = _model_facts.gather(list(paths) + [h["path"] for h in hub])
    for path in pending:
        if path in out and not out[path]["exists"]:
            out[path]["pending"] = True
    for entry in hub:
        if out[entry["path"]]["exists"]:
            continue
        read = reader(token=entry.get("token") or None, timeout=timeout, endpoint=entry.get("endpoint"))
        out[entry["path"]] = hub_facts(entry["path"], entry["endpoint"], entry["repo"], entry["revision"],
                                       entry.get("allow_patterns") or (), read)
    return out
