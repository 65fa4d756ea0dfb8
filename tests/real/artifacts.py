"""Real artifacts from the Python index, fetched once into a cache outside the checkout.

The real-artifact tier (tests/real/) tests volta.serving against the real releases it meets on a
V100 host: vLLM wheels and source files, torch wheels, the real vLLM CLI parser and config classes.
Nothing fetched here is ever committed: the cache is ``$VOLTA_REAL_CACHE`` (default
``~/.cache/volta-serving/real``), shared by every checkout on the machine, so a second clone or a
rerun downloads nothing.

``fetch()`` uses the machine's own pip (its index and configuration), so no index host is named
here. Without a reachable index ``unavailable()`` raises :class:`Offline`, or skips the test where
``tests/real/run`` found the index unreachable.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path

from ansible_collections.volta.serving.plugins.module_utils import _index

CACHE = Path(os.environ.get("VOLTA_REAL_CACHE") or Path.home() / ".cache" / "volta-serving" / "real")


class Offline(Exception):
    """The Python index cannot be reached (or refused the download): the real tier cannot run."""


def unavailable(reason):
    """Skip the calling test when ``tests/real/run`` found the index unreachable; otherwise fail.

    Online, a download that fails is a failure: CI reaches the index and must run this tier.
    """
    if os.environ.get("VOLTA_REAL_OFFLINE") == "1":
        import pytest

        pytest.skip(f"real tier offline: {reason}")
    raise Offline(reason)


@contextmanager
def _locked(name):
    """One fetch of *name* at a time across processes (pytest-xdist, two checkouts)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(cmd, what, *, timeout=2400):
    """Run *cmd* (a download or an install from the index); a failure or a time-out is :func:`unavailable`."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        unavailable(f"{what}: did not finish in {timeout} s")
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        unavailable(f"{what} failed: {lines[-1] if lines else 'exit ' + str(proc.returncode)}")
    return proc


def index_url():
    """The index the machine's pip uses: PIP_INDEX_URL, else its configuration, else pip's own default."""
    url = os.environ.get("PIP_INDEX_URL")
    if not url:
        proc = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              check=False)
        for line in proc.stdout.splitlines():
            key, _sep, value = line.partition("=")
            if key.endswith(".index-url"):
                url = value.strip().strip("'\"")
    if not url:
        from pip._internal.models.index import PyPI

        url = PyPI.simple_url
    return url.rstrip("/")


def _fetch_sdist(project, version, dest):
    """Download the sdist the index's project page lists, checked against the page's sha256.

    pip is not used for sdists: ``pip download`` builds an sdist's metadata, and vLLM's needs its
    build requirements (a CUDA torch). The page is read with the collection's own index reader
    (``module_utils/_index.py``, what the engine role's ``dist_metadata`` uses).
    """
    page_url = _index.project_page_url(index_url(), project)
    try:
        html = _index.read_url(page_url, 60, accept="text/html").decode("utf-8", "replace")
        _wheels, sdists = _index.release_files(_index.parse_project_page(html, page_url), project, version)
        if not sdists:
            unavailable(f"{page_url} lists no sdist of {project} {version}")
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            got = _index.download(sdists[0]["url"], tmp, 600, limit=1 << 30, sha256=sdists[0]["sha256"])
            final = dest / os.path.basename(got)
            os.replace(got, final)
    except _index.MetadataError as exc:
        unavailable(f"{page_url}: {exc}")
    return final


def fetch(project, version, *, kind="wheel"):
    """Path of the real *project*==*version* distribution (``kind``: wheel or sdist), downloaded once.

    A wheel is the one pip picks for this machine (vLLM's are ``abi3``, so any CPython 3.8+ takes
    the same file); an sdist is the ``.tar.gz`` the index lists. Raises :class:`Offline` (or skips,
    see :func:`unavailable`) when the index cannot be reached.
    """
    if kind not in ("wheel", "sdist"):
        raise ValueError(f"kind must be wheel or sdist, not {kind!r}")
    dest = CACHE / "dists" / f"{project}-{version}-{kind}"
    with _locked(f"{project}-{version}-{kind}"):
        done = sorted(p for p in dest.glob("*") if p.is_file()) if dest.is_dir() else []
        if done:
            return done[0]
        dest.mkdir(parents=True, exist_ok=True)
        if kind == "sdist":
            return _fetch_sdist(project, version, dest)
        with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
            run([sys.executable, "-m", "pip", "--disable-pip-version-check", "download", "--no-deps", "-q",
                 "--only-binary=:all:", "-d", tmp, f"{project}=={version}"], f"pip download {project}=={version}")
            got = [p for p in Path(tmp).iterdir() if p.is_file()]
            if len(got) != 1:
                unavailable(f"pip download {project}=={version} gave {len(got)} files")
            final = dest / got[0].name
            os.replace(got[0], final)
        return final


def member(dist, name_suffix):
    """The bytes of the one file in *dist* (a wheel, or an sdist .tar.gz) whose path ends with *name_suffix*."""
    dist = Path(dist)
    if dist.suffix == ".whl":
        with zipfile.ZipFile(dist) as zf:
            names = [n for n in zf.namelist() if n.endswith(name_suffix)]
            if len(names) != 1:
                raise KeyError(f"{dist.name}: {len(names)} members end with {name_suffix}")
            return zf.read(names[0])
    import tarfile

    with tarfile.open(dist) as tf:
        names = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(name_suffix)]
        if len(names) != 1:
            raise KeyError(f"{dist.name}: {len(names)} members end with {name_suffix}")
        return tf.extractfile(names[0]).read()


def extract(dist, predicate, into):
    """Extract the wheel members for which ``predicate(name)`` is true under *into*; return their paths."""
    out = []
    with zipfile.ZipFile(dist) as zf:
        for name in zf.namelist():
            if predicate(name):
                target = Path(into) / name
                if not target.exists():
                    zf.extract(name, into)
                out.append(target)
    return out
