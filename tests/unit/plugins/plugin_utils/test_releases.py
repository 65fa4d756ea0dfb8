# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_releases: an index's releases of a project, read through an injected reader (never the network)."""

from __future__ import annotations

import json

from ansible_collections.volta.serving.plugins.plugin_utils import _releases

INDEX = "https://pypi.example/simple"


def reader(body, seen=None):
    def read(url, accept):
        if seen is not None:
            seen.append((url, accept))
        if isinstance(body, Exception):
            raise body
        return body
    return read


def test_pep_691_json_versions():
    seen = []
    out = _releases.read_releases(INDEX, "vllm", reader(json.dumps({"versions": ["0.19.1", "0.21.0"]}).encode(), seen))
    assert out == {"project": "vllm", "index": INDEX, "versions": ["0.19.1", "0.21.0"], "error": None}
    assert seen[0][0] == "https://pypi.example/simple/vllm/"
    assert "application/vnd.pypi.simple.v1+json" in seen[0][1]


def test_json_without_versions_reads_the_file_names():
    body = json.dumps({"files": [{"filename": "vllm-0.21.0.tar.gz"},
                                 {"filename": "vllm-0.21.0-cp38-abi3-manylinux1_x86_64.whl"},
                                 {"filename": "vllm-0.22.0rc1.tar.gz"}]})
    assert _releases.read_releases(INDEX, "vllm", reader(body.encode()))["versions"] == ["0.21.0", "0.22.0rc1"]


def test_html_page_of_a_pep_503_mirror():
    body = b'<html><body><a href="../../p/vllm-0.19.1.tar.gz#sha256=ab">vllm-0.19.1.tar.gz</a>\n' \
           b'<a href="x" data-requires-python="&gt;=3.10">vllm-0.21.0-cp38-abi3-manylinux1_x86_64.whl</a></body></html>'
    assert _releases.read_releases(INDEX, "vllm", reader(body))["versions"] == ["0.19.1", "0.21.0"]


def test_an_index_that_cannot_be_read_gives_the_reason_not_an_exception():
    out = _releases.read_releases(INDEX, "vllm", reader(OSError("Connection refused")))
    assert out["versions"] is None and out["error"] == "OSError: Connection refused"
    assert _releases.read_releases("file:///srv/index", "vllm", reader(b"{}"))["error"].startswith("not an http(s)")
    assert _releases.read_releases(INDEX, "vllm", reader(b"{}"))["error"] == "the index lists no release of vllm"


def test_credentials_in_the_index_url_are_never_shown():
    url = "https://user:s3cret@mirror.example/simple"
    out = _releases.read_releases(url, "vllm", reader(OSError(f"failed to open {url}")))
    assert out["index"] == "https://***@mirror.example/simple"
    assert "s3cret" not in repr(out)
