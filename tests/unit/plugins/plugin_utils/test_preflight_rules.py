# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_preflight_rules and _skipped: the controller's checks of one host's variables, and what did not run."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _preflight_rules as rules
from ansible_collections.volta.serving.plugins.plugin_utils import _skipped

REAL_SHA = "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19"


COMMIT = "2d2d6f3ca4d2dda655cec488e7022f183285ecd7"


@pytest.mark.parametrize(("value", "fake"), [("a" * 64, True), ("1" * 40, True), ("deadbeef" * 8, True),
                                             ("0123" * 16, True), (REAL_SHA, False), (COMMIT, False)])
def test_placeholders(value, fake):
    assert rules.placeholder(value) is fake


@pytest.mark.parametrize(("version", "branch", "refused"), [
    ("", "580", False), ("580.95.05", "580", False), ("580.95.05-0ubuntu1", "580", False), ("580.95", "580", False),
    ("590.44.01", "580", True), ("5800.1", "580", True), ("580", "580", True), ("latest", "580", True)])
def test_driver_version_against_its_branch(version, branch, refused):
    found = rules.driver_version("h", version, branch)
    assert bool(found) is refused
    if refused:
        start = f"h: host-wide: field nvidia_driver_version: nvidia_driver_version {version}"
        assert found[0]["message"].startswith(start)


@pytest.mark.parametrize(("version", "ok"), [("0.21.0", True), ("1.5.1", True), ("0.22.0rc1", True), ("latest", False),
                                             (">=0.21", False), ("0.21.0+cu126", False), ("", False)])
def test_engine_version_form(version, ok):
    assert (rules.engine_versions("h", {"engine_vllm_version": version}, {}) == []) is ok


def test_engine_version_on_the_index():
    read = {"project": "vllm", "index": "https://pypi.org/simple", "versions": ["0.19.1", "0.21.0"], "error": None}
    assert rules.engine_versions("h", {"engine_vllm_version": "0.21.0"}, {"engine_vllm_version": read}) == []
    [hit] = rules.engine_versions("h", {"engine_vllm_version": "0.99.0"}, {"engine_vllm_version": read})
    assert hit["rule"] == "engine-version" and "newest there: 0.19.1, 0.21.0" in hit["message"]


def test_sha256_pins_empty_allowed_wrong_form_and_fakes_refused():
    found = rules.sha256_pins("h", {"engine_uv_sha256": REAL_SHA, "engine_onecat_sha256": "",
                                    "engine_llamacpp_source_sha256": "f" * 64, "engine_vllm_source_sha256": "xyz"})
    assert [f["field"] for f in found] == ["engine_llamacpp_source_sha256", "engine_vllm_source_sha256"]


def test_api_cidrs_only_with_instances_and_the_firewall_on():
    served = [{"name": "chat"}, {"name": "off", "enabled": False}]
    assert rules.api_cidrs("h", served, {"firewall_enabled": True, "api_cidrs": []})[0]["field"] == "firewall_api_cidrs"
    assert rules.api_cidrs("h", served, {"firewall_enabled": False, "api_cidrs": []}) == []
    assert rules.api_cidrs("h", served, {"firewall_enabled": True, "api_cidrs": ["10.0.0.0/8"]}) == []
    assert rules.api_cidrs("h", [{"name": "off", "enabled": False}], {"api_cidrs": []}) == []


def test_controller_model_facts_keep_what_was_read_and_say_why_not_the_rest():
    facts = {"/srv/m": {"local": True, "exists": False}, "/home/me/m": {"local": True, "exists": True},
             "/srv/volta/models/q@1": {"local": True, "exists": False, "hub_error": "HTTP 401"}}
    kept, reasons = _skipped.controller_model_facts(facts)
    assert list(kept) == ["/home/me/m"]
    assert reasons["/srv/m"].startswith("not on the controller")
    assert "HTTP 401" in reasons["/srv/volta/models/q@1"]


def test_skipped_lists_the_model_rules_and_the_gpu_check():
    instances = [{"name": "a", "engine": "vllm", "model": "/srv/m"}, {"name": "b", "engine": "vllm", "model": "/srv/m"}]
    lines = _skipped.skipped(instances, None, None)
    assert lines == [f"{_skipped.MODEL_RULES} for instances a, b: no model was read in this run",
                     "gpu-facts-mismatch (volta_server against nvidia-smi): the GPUs were not read in this run"]
    assert _skipped.skipped(instances, {"/srv/m": {"local": True, "exists": True}}, {"status": "ok"}) == []
