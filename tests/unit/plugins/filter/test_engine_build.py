# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the filters volta.serving.engine_build_plan, engine_wheel_paths and engine_sdist_link."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter import engine_build as plugin


def test_filters_are_registered():
    assert set(plugin.FilterModule().filters()) == {"engine_build_plan", "engine_wheel_paths", "engine_sdist_link",
                                                    "engine_llamacpp_key"}


def test_llamacpp_key_filter_names_the_bad_input():
    with pytest.raises(AnsibleFilterError, match=r"engine_llamacpp_key: expected a mapping"):
        plugin.engine_llamacpp_key("llamacpp")
    with pytest.raises(AnsibleFilterError, match=r"engine_llamacpp_key: engine_llamacpp_source_sha256 is ''"):
        plugin.engine_llamacpp_key({"ref": "b6000", "source_sha256": "", "cuda": False, "compiler": "12.2.0",
                                    "os": "Debian 12"})


def test_build_plan_names_missing_inputs_and_bad_values():
    with pytest.raises(AnsibleFilterError, match=r"missing .*torch_cuda"):
        plugin.engine_build_plan({"engine": "vllm"})
    spec = {"method": "binary", "compute_capability": "7.0", "engine": "vllm", "version": "0.21.0",
            "torch_version": "2.11.0", "torch_cuda": "cu126", "cuda_version": "12.8", "python": "python3.11",
            "vcpus": 2, "memory_mb": 4000, "job_memory_mb": 4096}
    with pytest.raises(AnsibleFilterError, match=r"engine_build_plan: engine_vllm_install_method is 'binary'"):
        plugin.engine_build_plan(spec)
    assert plugin.engine_build_plan(dict(spec, method="auto"))["max_jobs"] == 1


def test_wheel_paths_and_sdist_link_errors():
    with pytest.raises(AnsibleFilterError, match=r"expected a list"):
        plugin.engine_wheel_paths("a")
    assert plugin.engine_wheel_paths([None]) == {}
    with pytest.raises(AnsibleFilterError, match=r"engine_sdist_link: .* lists no source distribution"):
        plugin.engine_sdist_link("<html></html>", "http://r/simple/vllm/", "vllm", "1.0")
