# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a distribution's core metadata before anything big is downloaded.

Private to volta.serving; the Python standard library and ansible.module_utils.urls only (it runs on
the managed host, proxies and CA certificates as Ansible's own downloads). Sources, cheapest first:

- a PEP 503 simple index page: the pinned version's files. A wheel whose link carries PEP 658/714
  ``data-core-metadata`` (or the older ``data-dist-info-metadata``) has its METADATA at
  ``<file url>.metadata``, a few kB. Some mirrors serve that file without the attribute, so it is
  also tried unadvertised before falling back to the sdist, whose PKG-INFO is read after
  downloading it (tens of MB, small next to torch);
- a wheel or sdist file (a path, or a URL that is downloaded): METADATA / PKG-INFO read from it.

``torch_problems`` compares the torch requirement found there with the torch the role installs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import zipfile
from email.parser import HeaderParser
from html.parser import HTMLParser

from ansible_collections.volta.serving.plugins.module_utils._pyreq import (
    RequirementError,
    Version,
    canonical_name,
    parse_requirement,
    specifier_contains,
)
from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import sm70_cuda_tags

USER_AGENT = "volta.serving-dist-metadata"
SDIST_LIMIT = 256 * 1024 * 1024  # bytes; vLLM's sdist is about 31 MB
METADATA_LIMIT = 8 * 1024 * 1024
_SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip")


class MetadataError(Exception):
    """The metadata could not be read; the message names the URL or file and the cause."""


# --------------------------------------------------------------------------------------------
# HTTP (and file://) reads with a timeout, a size limit and errors that name the URL.


def _open(url, timeout, accept=None):
    # Imported here, not above: ansible.module_utils.urls pulls in ssl and http.client, which the
    # page parsing alone (the controller's engine_sdist_link filter) does not need.
    from ansible.module_utils.urls import ConnectionError as UrlsConnectionError
    from ansible.module_utils.urls import open_url

    headers = {"Accept": accept} if accept else {}
    try:
        return open_url(url, headers=headers, timeout=timeout, http_agent=USER_AGENT)
    except urllib.error.HTTPError as exc:
        raise MetadataError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        what = "cannot read" if url.startswith("file:") else "cannot connect"
        raise MetadataError(f"{url}: {what} ({exc.reason})") from exc
    except (OSError, ValueError, UrlsConnectionError) as exc:  # timeouts, TLS, bad URLs
        raise MetadataError(f"{url}: {exc or type(exc).__name__}") from exc


def _copy(response, out, url, limit):
    size = 0
    try:
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                return size
            size += len(chunk)
            if limit is not None and size > limit:
                raise MetadataError(f"{url}: larger than {limit // (1024 * 1024)} MB, not read")
            out.write(chunk)
    except OSError as exc:
        raise MetadataError(f"{url}: read failed after {size} bytes ({exc or type(exc).__name__})") from exc


def read_url(url, timeout, limit=METADATA_LIMIT, accept=None):
    """The body of *url* (bytes)."""
    with _open(url, timeout, accept) as response:
        buf = _Buffer()
        _copy(response, buf, url, limit)
        return bytes(buf.data)


class _Buffer:
    def __init__(self):
        self.data = bytearray()

    def write(self, chunk):
        self.data += chunk


def download(url, dest_dir, timeout, limit=SDIST_LIMIT, sha256=None):
    """Download *url* into *dest_dir*; return the path. Checks *sha256* when given."""
    name = os.path.basename(urllib.parse.urlsplit(url).path) or "download"
    path = os.path.join(dest_dir, name)
    with _open(url, timeout) as response, open(path, "wb") as out:
        _copy(response, out, url, limit)
    if sha256:
        _check_sha256(url, _sha256_file(path), sha256)
    return path


def _sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_sha256(what, got, want):
    if got.lower() != want.lower():
        raise MetadataError(f"{what}: sha256 {got}, but the index says {want}")


# --------------------------------------------------------------------------------------------
# PEP 503 project pages.


class _Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self._current = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._current = {"attrs": dict(attrs), "text": ""}

    def handle_data(self, data):
        if self._current is not None:
            self._current["text"] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._current is not None:
            self.links.append(self._current)
            self._current = None


def _metadata_attr(attrs):
    """PEP 714 ``data-core-metadata`` (or PEP 658's ``data-dist-info-metadata``): None, True or a hash."""
    for key in ("data-core-metadata", "data-dist-info-metadata"):
        value = attrs.get(key)
        if value is None or value.strip().lower() == "false":
            continue
        hashname, sep, hexdigest = value.strip().partition("=")
        if sep and hashname.lower() == "sha256":
            return {"sha256": hexdigest}
        return {}
    return None


def parse_project_page(html_text, page_url):
    """The files a PEP 503 project page links: filename, url (no fragment), sha256, metadata."""
    parser = _Links()
    parser.feed(html_text)
    files = []
    for link in parser.links:
        href = link["attrs"].get("href")
        if not href:
            continue
        url, _sep, fragment = urllib.parse.urljoin(page_url, href).partition("#")
        name = urllib.parse.unquote(os.path.basename(urllib.parse.urlsplit(url).path))
        hashname, _eq, hexdigest = fragment.partition("=")
        files.append(
            {
                "filename": link["text"].strip() or name,
                "url": url,
                "sha256": hexdigest if hashname == "sha256" and hexdigest else None,
                "metadata": _metadata_attr(link["attrs"]),
            }
        )
    return files


def project_page_url(index_url, name):
    """``<index>/<normalised name>/``; on a ``file://`` index its ``index.html`` (as pip reads it)."""
    url = index_url.rstrip("/") + "/" + canonical_name(name) + "/"
    return url + "index.html" if url.startswith("file:") else url


def _same_version(a, b):
    try:
        return Version(a) == Version(b)
    except RequirementError:
        return a == b


def file_kind(filename, name, version):
    """``"wheel"``/``"sdist"`` when *filename* is a file of *name* *version*, else None."""
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        if len(parts) >= 5 and canonical_name(parts[0]) == canonical_name(name) and _same_version(parts[1], version):
            return "wheel"
        return None
    for suffix in _SDIST_SUFFIXES:
        if filename.endswith(suffix):
            dist, _sep, ver = filename[: -len(suffix)].rpartition("-")
            if dist and canonical_name(dist) == canonical_name(name) and _same_version(ver, version):
                return "sdist"
    return None


def _wheel_rank(filename, arch):
    platform = filename[:-4].split("-")[-1]
    if arch and arch in platform:
        return 0
    return 1 if platform == "any" else 2


def release_files(files, name, version, arch=None):
    """(wheels, sdists) of *name* *version*; wheels for *arch* first, then pure, then the rest."""
    wheels = [f for f in files if file_kind(f["filename"], name, version) == "wheel"]
    sdists = [f for f in files if file_kind(f["filename"], name, version) == "sdist"]
    wheels.sort(key=lambda f: (_wheel_rank(f["filename"], arch), f["filename"]))
    return wheels, sdists


# --------------------------------------------------------------------------------------------
# Core metadata (METADATA, PKG-INFO) and the files that hold it.


def parse_metadata(text):
    """name, version, requires_dist, requires_python, dynamic of a core metadata document."""
    headers = HeaderParser().parsestr(text, headersonly=True)
    if not headers.get("Name") or not headers.get("Version"):
        raise MetadataError("no Name/Version header: not core metadata")
    return {
        "name": headers["Name"].strip(),
        "version": headers["Version"].strip(),
        "requires_dist": [r.strip() for r in headers.get_all("Requires-Dist") or []],
        "requires_python": (headers.get("Requires-Python") or "").strip() or None,
        "dynamic": [d.strip() for d in headers.get_all("Dynamic") or []],
    }


def _decode(data, what):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetadataError(f"{what}: metadata is not UTF-8 ({exc})") from exc


def _shallowest(names, what, basename):
    found = sorted((n for n in names if n.rstrip("/").split("/")[-1] == basename), key=lambda n: (n.count("/"), n))
    if not found:
        raise MetadataError(f"{what}: no {basename} inside")
    return found[0]


def read_wheel_metadata(path):
    """The text of the ``*.dist-info/METADATA`` of the wheel at *path*."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if len(names) != 1:
                raise MetadataError(f"{path}: {len(names)} .dist-info/METADATA files, expected one")
            return _decode(zf.read(names[0]), path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise MetadataError(f"{path}: not a readable wheel ({exc})") from exc


def read_sdist_metadata(path):
    """The text of the top PKG-INFO of the sdist (.tar.gz or .zip) at *path*."""
    try:
        if path.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                return _decode(zf.read(_shallowest(zf.namelist(), path, "PKG-INFO")), path)
        with tarfile.open(path) as tf:
            member = _shallowest([m.name for m in tf.getmembers() if m.isfile()], path, "PKG-INFO")
            return _decode(tf.extractfile(member).read(), path)
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise MetadataError(f"{path}: not a readable sdist ({exc})") from exc


def read_file_metadata(path):
    if path.endswith(".whl"):
        return read_wheel_metadata(path)
    if path.endswith(_SDIST_SUFFIXES):
        return read_sdist_metadata(path)
    raise MetadataError(f"{path}: neither a wheel (.whl) nor an sdist (.tar.gz, .zip)")


def from_file(src, timeout):
    """Metadata of the wheel or sdist *src* (a path, a ``file://`` URL or an http(s) URL)."""
    scheme = urllib.parse.urlsplit(src).scheme
    if scheme in ("", "file"):
        path = urllib.parse.unquote(urllib.parse.urlsplit(src).path) if scheme else src
        result = parse_metadata(read_file_metadata(path))
        return dict(result, method="file", metadata_url=path)
    tmp = tempfile.mkdtemp(prefix="volta-dist-metadata-")
    try:
        path = download(src, tmp, timeout, limit=None)
        return dict(parse_metadata(read_file_metadata(path)), method="download", metadata_url=src)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# From an index: PEP 658 first, then the unadvertised .metadata file, then the sdist.


def _pep658(wheel, timeout):
    url = wheel["url"] + ".metadata"
    data = read_url(url, timeout)
    if wheel["metadata"] and wheel["metadata"].get("sha256"):
        _check_sha256(url, hashlib.sha256(data).hexdigest(), wheel["metadata"]["sha256"])
    return _decode(data, url), url


def _from_sdist(sdist, timeout):
    tmp = tempfile.mkdtemp(prefix="volta-dist-metadata-")
    try:
        path = download(sdist["url"], tmp, timeout, sha256=sdist["sha256"])
        return read_sdist_metadata(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_identity(meta, name, version, where):
    if canonical_name(meta["name"]) != canonical_name(name) or not _same_version(meta["version"], version):
        raise MetadataError(f"{where}: metadata is for {meta['name']} {meta['version']}, not {name} {version}")
    return meta


def from_index(index_url, name, version, timeout, arch=None):
    """Metadata of *name* == *version* on the PEP 503 index *index_url*, reading as little as possible."""
    page = project_page_url(index_url, name)
    body = read_url(page, timeout, accept="application/vnd.pypi.simple.v1+html, text/html;q=0.9")
    wheels, sdists = release_files(parse_project_page(_decode(body, page), page), name, version, arch)
    if not wheels and not sdists:
        raise MetadataError(f"{page}: no file of {name} {version} (is the version on this index?)")
    advertised = [w for w in wheels if w["metadata"] is not None]
    if advertised:
        text, url = _pep658(advertised[0], timeout)
        return check_identity(dict(parse_metadata(text), method="pep658", metadata_url=url), name, version, url)
    tried = []
    if wheels:
        try:
            text, url = _pep658(wheels[0], timeout)
            meta = dict(parse_metadata(text), method="pep658-unadvertised", metadata_url=url)
            return check_identity(meta, name, version, url)
        except MetadataError as exc:
            tried.append(str(exc))
    if sdists:
        meta = dict(parse_metadata(_from_sdist(sdists[0], timeout)), method="sdist", metadata_url=sdists[0]["url"])
        return check_identity(meta, name, version, sdists[0]["url"])
    raise MetadataError(
        f"{page}: {name} {version} has only wheels, none with PEP 658 metadata ({'; '.join(tried)}), and no sdist; "
        "use an index that serves PEP 658 metadata (PyPI does) or give the wheel file itself"
    )


# --------------------------------------------------------------------------------------------
# What the metadata requires of torch, and whether the role's pins agree.


def requirements(requires_dist):
    """The requirements that always apply (not behind an ``extra`` marker), parsed; unreadable ones skipped."""
    out = []
    for text in requires_dist:
        try:
            req = parse_requirement(text)
        except RequirementError:
            continue
        if req["marker"] and "extra" in req["marker"]:
            continue
        out.append(req)
    return out


def exact_pins(requires_dist):
    """``{canonical name: version}`` of the requirements that pin one version exactly (``name==X``)."""
    pins = {}
    for req in requirements(requires_dist):
        spec = req["specifier"] or ""
        if spec.startswith("==") and "," not in spec and not spec.endswith(".*"):
            pins.setdefault(req["key"], spec[2:])
    return pins


def _torch_fix(meta, torch_version, pin, torch_variable, cuda_variable):
    tags = sm70_cuda_tags(pin) if pin else []
    keep = (
        f"with a CUDA tag that keeps sm_70 ({cuda_variable}: {' or '.join(tags)})"
        if tags
        else f"with a CUDA tag that keeps sm_70 (none is recorded for torch {pin}: check PyTorch's support matrix)"
    )
    target = f"set {torch_variable}: {pin} {keep}, or " if pin else ""
    return f"{target}pin a {meta['name']} release that requires torch {torch_version}."


def torch_problems(meta, torch_version, torch_variable="torch_version", cuda_variable="the CUDA tag", companions=None):
    """Messages (what. Why: ... Fix: ...) where *meta*'s torch requirements disagree with the role's pins.

    *torch_version* is the torch the role installs, *companions* (``{"torchvision": "0.26.0"}``) the
    companions it installs with it; the variable names only shape the messages.
    """
    who = f"{meta['name']} {meta['version']}"
    reqs = {req["key"]: req for req in requirements(meta["requires_dist"])}
    torch = reqs.get("torch")
    if torch is None or not torch["specifier"]:
        return []
    if not specifier_contains(torch["specifier"], torch_version):
        pin = exact_pins(meta["requires_dist"]).get("torch")
        return [
            f"{who} requires torch{torch['specifier']} but {torch_variable} is {torch_version}. "
            f"Why: {meta['name']} is compiled against that torch (its metadata: Requires-Dist: "
            f"torch{torch['specifier']}) and is installed --no-deps next to the torch the role pins, so nothing "
            "else stops the mismatch: its compiled extensions fail to load (undefined symbol) or misbehave "
            "when the server starts, after the smoke test has passed. "
            f"Fix: {_torch_fix(meta, torch_version, pin, torch_variable, cuda_variable)}"
        ]
    out = []
    for comp, have in sorted((companions or {}).items()):
        req = reqs.get(canonical_name(comp))
        if req is not None and req["specifier"] and not specifier_contains(req["specifier"], have):
            out.append(
                f"{who} requires {comp}{req['specifier']} but the {comp} the role installs with torch "
                f"{torch_version} is {have}. Why: the companions must be the builds of that torch release. "
                "Fix: correct the companion table __engine_torch_companions (roles/engine/vars/main.yml) from "
                f"the {comp} metadata (Requires-Dist: torch==...)."
            )
    return out
