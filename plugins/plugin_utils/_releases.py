# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The releases of a project on a Python package index, read from the controller by preflight.

The standard library and Ansible's ``open_url`` (proxies and CA certificates as Ansible's own downloads).
``read_releases(index_url, project, read)`` asks the index's simple API for the
project's page (PEP 691 JSON when the index serves it, else the PEP 503 HTML page) and returns the
versions it lists. *read* (``url, accept -> bytes``) does the request; unit tests pass their own, so no
test touches the network. ``read_releases`` never raises: an index that cannot be read gives
``versions: None`` and the reason, which preflight reports as a warning.
"""

from __future__ import annotations

import json
import re
import urllib.parse

ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
LIMIT = 16 * 1024 * 1024
# vllm-0.21.0.tar.gz, vllm-0.21.0-cp38-abi3-manylinux1_x86_64.whl -> 0.21.0
_FILE_RE = r"^{name}-(?P<version>[0-9][^-]*?)(?:\.tar\.gz|\.zip|-[^/]*\.whl)$"
_HREF_RE = re.compile(r"<a\s[^>]*>(?P<text>[^<]+)</a>", re.IGNORECASE)


def normalise(name):
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def page_url(index_url, project):
    return f"{index_url.rstrip('/')}/{normalise(project)}/"


def urllib_read(timeout):
    """A reader over Ansible's open_url (the controller's proxies from the environment), imported at the first read."""

    def read(url, accept):
        from ansible.module_utils.urls import open_url

        headers = {"Accept": accept, "User-Agent": "volta.serving-preflight"}
        with open_url(url, headers=headers, timeout=timeout) as response:
            return response.read(LIMIT)
    return read


def _from_files(filenames, project):
    pattern = re.compile(_FILE_RE.format(name=re.escape(normalise(project)).replace("\\-", "[-_.]")), re.IGNORECASE)
    versions = []
    for filename in filenames:
        match = pattern.match(urllib.parse.unquote(filename.strip()))
        if match and match.group("version") not in versions:
            versions.append(match.group("version"))
    return versions


def parse_page(body, project):
    """The versions of a simple-API page: PEP 691 JSON (``versions``, else the files' names), or HTML."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        data = json.loads(text)
    except ValueError:
        return _from_files([m.group("text") for m in _HREF_RE.finditer(text)], project)
    if isinstance(data.get("versions"), list):
        return [str(v) for v in data["versions"]]
    return _from_files([f.get("filename", "") for f in data.get("files") or [] if isinstance(f, dict)], project)


def shown(url):
    """*url* without its user and password, for messages (an index URL may carry credentials)."""
    parts = urllib.parse.urlsplit(str(url))
    if "@" not in parts.netloc:
        return str(url)
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def read_releases(index_url, project, read):
    """``{project, index, versions, error}``: the index's versions of *project*, or None and why not.

    ``index`` is the URL without credentials; the error never repeats the URL."""
    out = {"project": project, "index": shown(index_url), "versions": None, "error": None}
    scheme = urllib.parse.urlsplit(str(index_url)).scheme
    if scheme not in ("http", "https"):
        out["error"] = f"not an http(s) index URL: {shown(index_url)!r}"
        return out
    try:
        versions = parse_page(read(page_url(index_url, project), ACCEPT), project)
    except Exception as exc:  # any failure to read the index is reported, never raised
        out["error"] = f"{type(exc).__name__}: {str(exc).replace(str(index_url), out['index'])}"
        return out
    if not versions:
        out["error"] = f"the index lists no release of {project}"
        return out
    out["versions"] = versions
    return out
