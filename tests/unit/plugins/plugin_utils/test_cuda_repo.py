# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _cuda_repo: NVIDIA's CUDA repository URL of a host, and what of it differs on the host."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import cuda_repo as flt
from ansible_collections.volta.serving.plugins.plugin_utils import _cuda_repo as cr

NOBLE = {"distribution": "Ubuntu", "distribution_version": "24.04", "distribution_major_version": "24"}
JAMMY = {"distribution": "Ubuntu", "distribution_version": "22.04", "distribution_major_version": "22"}
BOOKWORM = {"distribution": "Debian", "distribution_version": "12.11", "distribution_major_version": "12"}
BASE = "https://developer.download.nvidia.com/compute/cuda/repos/"


@pytest.mark.parametrize(("url", "facts", "expected"), [
    ("", NOBLE, BASE + "ubuntu2404/x86_64/"),
    ("", JAMMY, BASE + "ubuntu2204/x86_64/"),
    ("", BOOKWORM, BASE + "debian12/x86_64/"),
    # before the facts are gathered (argument validation templates early)
    ("", {}, BASE + "unknown/x86_64/"),
    (None, BOOKWORM, BASE + "debian12/x86_64/"),
    ("  ", NOBLE, BASE + "ubuntu2404/x86_64/"),
    # the inventory's repository wins, as written
    ("http://volta-lab-repo:8080/cuda/debian12/x86_64/", NOBLE, "http://volta-lab-repo:8080/cuda/debian12/x86_64/"),
])
def test_repo_url(url, facts, expected):
    assert cr.repo_url(url, facts) == expected
    assert flt.cuda_repo_url(url, facts) == expected


SOURCE_FILE = "/etc/apt/sources.list.d/nvidia-cuda.sources"
SOURCE = {"mode": "0644", "paragraphs": [{"X-Repolib-Name": "nvidia-cuda", "URIs": "http://r/"}]}
DONE = {"installed": {"python3-debian": "0.1.49", "cuda-keyring": "1.1-1"},
        "apt_sources": ["/etc/apt/sources.list.d/debian.sources", SOURCE_FILE],
        "read_sources": {SOURCE_FILE: SOURCE}}


def state(**changes):
    return {**DONE, **changes}


@pytest.mark.parametrize(("read", "expected"), [
    # a converged host: nothing to do
    (DONE, {"source_differs": False, "keyring_needed": False, "one_line_sources": [], "needed": False}),
    # a fresh host: no file, nothing installed
    ({"installed": {}, "apt_sources": [], "read_sources": {SOURCE_FILE: None}},
     {"source_differs": True, "keyring_needed": True, "one_line_sources": [], "needed": True}),
    # another URL in the file
    (state(read_sources={SOURCE_FILE: {"mode": "0644", "paragraphs": [{"X-Repolib-Name": "nvidia-cuda",
                                                                       "URIs": "http://other/"}]}}),
     {"source_differs": True, "keyring_needed": False, "one_line_sources": [], "needed": True}),
    # an older keyring
    (state(installed={"python3-debian": "0.1.49", "cuda-keyring": "1.0-1"}),
     {"source_differs": False, "keyring_needed": True, "one_line_sources": [], "needed": True}),
    # python3-debian missing
    (state(installed={"cuda-keyring": "1.1-1"}),
     {"source_differs": False, "keyring_needed": True, "one_line_sources": [], "needed": True}),
    # the keyring package's one-line source is back
    (state(apt_sources=[SOURCE_FILE, "/etc/apt/sources.list.d/cuda-debian12-x86_64.list",
                        "/etc/apt/sources.list.d/cudax.list"]),
     {"source_differs": False, "keyring_needed": True,
      "one_line_sources": ["/etc/apt/sources.list.d/cuda-debian12-x86_64.list"], "needed": True}),
    # nothing read
    (None, {"source_differs": True, "keyring_needed": True, "one_line_sources": [], "needed": True}),
])
def test_repo_changes(read, expected):
    assert cr.repo_changes(read, SOURCE_FILE, SOURCE, "1.1-1") == expected
    assert flt.cuda_repo_changes(read, SOURCE_FILE, SOURCE, "1.1-1") == expected
