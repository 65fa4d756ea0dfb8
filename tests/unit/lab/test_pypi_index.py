"""tests/lab/pypi/build write_index: PEP 503 pages with PEP 658/714 metadata, read by _index like a real index."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import io
import tarfile
import urllib.parse
import zipfile
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils._index import (
    exact_pins,
    from_index,
    parse_project_page,
)

BUILD = Path(__file__).resolve().parents[2] / "lab" / "pypi" / "build"
METADATA = "Metadata-Version: 2.1\nName: vllm\nVersion: 0.19.1\nRequires-Dist: torch==2.10.0\n"


@pytest.fixture(scope="module")
def build():
    loader = importlib.machinery.SourceFileLoader("lab_pypi_build", str(BUILD))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture
def index(tmp_path, build):
    packages = tmp_path / "packages"
    packages.mkdir()
    wheel = packages / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("vllm/__init__.py", "")
        zf.writestr("vllm-0.19.1.dist-info/METADATA", METADATA)
    sdist = packages / "vllm-0.19.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        info = tarfile.TarInfo("vllm-0.19.1/PKG-INFO")
        info.size = len(METADATA)
        tf.addfile(info, io.BytesIO(METADATA.encode()))
    root = tmp_path / "simple"
    count = build.write_index(str(root), [str(wheel), str(sdist)],
                              lambda f: "../../packages/" + urllib.parse.quote(f))
    assert count == 1
    return root, wheel, sdist


def test_wheel_metadata_file_and_attributes(index):
    root, wheel, sdist = index
    meta_file = Path(str(wheel) + ".metadata")
    assert meta_file.read_text() == METADATA
    digest = hashlib.sha256(meta_file.read_bytes()).hexdigest()
    page = (root / "vllm" / "index.html").read_text()
    files = {f["filename"]: f for f in parse_project_page(page, (root / "vllm").as_uri() + "/")}
    assert files[wheel.name]["metadata"] == {"sha256": digest}
    assert f'data-dist-info-metadata="sha256={digest}"' in page
    assert f'data-core-metadata="sha256={digest}"' in page
    assert files[sdist.name]["metadata"] is None  # no metadata file for an sdist, as on PyPI
    assert not Path(str(sdist) + ".metadata").exists()


def test_the_lab_index_takes_the_fast_path(index):
    root, _wheel, _sdist = index
    meta = from_index(root.as_uri(), "vllm", "0.19.1", 5, "x86_64")
    assert meta["method"] == "pep658"
    assert exact_pins(meta["requires_dist"]) == {"torch": "2.10.0"}
