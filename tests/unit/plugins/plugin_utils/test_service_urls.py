# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _service_urls: the roles' Python index (own, else the plan's) and their addresses in URLs."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import service_urls as plugin

PLAN = {"plan": {"shared": {"python_index_url": "http://lab:8080/pypi/simple"}}}


@pytest.mark.parametrize(("own", "serving_plan", "want"), [
    ("https://mirror/simple", PLAN, "https://mirror/simple"),
    ("", PLAN, "http://lab:8080/pypi/simple"),
    ("", {"skipped": True}, "https://pypi.org/simple"),
    ("", None, "https://pypi.org/simple"),
    ("", {"plan": {"shared": {"python_index_url": ""}}}, "https://pypi.org/simple"),
    (None, PLAN, "http://lab:8080/pypi/simple"),
])
def test_python_index_url(own, serving_plan, want):
    assert plugin.python_index_url(own, serving_plan) == want


@pytest.mark.parametrize(("url", "extra", "want"), [
    ("https://pypi.org/simple", None, ["--index-url", "https://pypi.org/simple"]),
    ("https://pypi.org/simple", ["--no-deps"], ["--index-url", "https://pypi.org/simple", "--no-deps"]),
    ("http://volta-lab-repo:8080/pypi/simple", ["--no-deps", "--require-hashes"],
     ["--index-url", "http://volta-lab-repo:8080/pypi/simple", "--no-deps", "--require-hashes",
      "--trusted-host", "volta-lab-repo"]),
    ("http://[2001:db8::1]:8080/simple", [],
     ["--index-url", "http://[2001:db8::1]:8080/simple", "--trusted-host", "2001:db8::1"]),
])
def test_python_index_args(url, extra, want):
    assert plugin.python_index_args(url, extra) == want


@pytest.mark.parametrize(("address", "asked", "want"), [
    ("127.0.0.1", False, "127.0.0.1"),
    ("10.0.0.11", True, "10.0.0.11"),
    ("0.0.0.0", False, "0.0.0.0"),  # noqa: S104  the setting under test
    ("0.0.0.0", True, "127.0.0.1"),  # noqa: S104  the setting under test
    ("::", False, "[::]"),
    ("::", True, "[::1]"),
    ("2001:db8::11", False, "[2001:db8::11]"),
    ("[2001:db8::11]", True, "[2001:db8::11]"),
    ("localhost", True, "localhost"),
])
def test_url_host(address, asked, want):
    assert plugin.url_host(address, asked) == want


@pytest.mark.parametrize(("address", "want"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("10.0.0.11", False), ("0.0.0.0", False), ("::", False),  # noqa: S104  the setting under test
])
def test_loopback_address(address, want):
    assert plugin.loopback_address(address) is want
