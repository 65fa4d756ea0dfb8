# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_engine_build.py (engine builds from source, build once per fleet)."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _engine_build as eb

SPEC = {
    "method": "auto", "compute_capability": "7.0", "engine": "vllm", "version": "0.21.0",
    "torch_version": "2.11.0", "torch_cuda": "cu126", "cuda_version": "12.8", "python": "python3.12",
    "source_sha256": "", "vcpus": 32, "memory_mb": 62000, "job_memory_mb": 4096, "jobs": 0,
}


@pytest.mark.parametrize(
    ("requested", "cc", "method"),
    [("auto", "7.0", "source"), ("auto", "7.5", "source"), ("auto", "8.0", "wheel"), ("auto", 9.0, "wheel"),
     ("wheel", "7.0", "wheel"), ("source", "8.6", "source")],
)
def test_install_method(requested, cc, method):
    assert eb.install_method(requested, cc)[0] == method


def test_install_method_refuses_unknown_values():
    with pytest.raises(eb.BuildPlanError, match=r"must be one of source, wheel, auto"):
        eb.install_method("binary", "7.0")
    with pytest.raises(eb.BuildPlanError, match=r"expected major.minor"):
        eb.install_method("auto", "sm_70")


@pytest.mark.parametrize(
    ("vcpus", "mem", "per", "req", "jobs"),
    [(32, 62000, 4096, 0, 15), (8, 62000, 4096, 0, 8), (64, 3000, 4096, 0, 1), (2, 8192, 4096, 0, 2),
     (16, 1000, 4096, 6, 6)],
)
def test_build_jobs_formula(vcpus, mem, per, req, jobs):
    assert eb.build_jobs(vcpus, mem, per, req)[0] == jobs


def test_build_jobs_says_why_and_refuses_zero_memory_per_job():
    assert "62000 MB available / 4096 MB per job = 15" in eb.build_jobs(32, 62000, 4096)[1]
    with pytest.raises(eb.BuildPlanError, match=r"engine_vllm_build_job_memory_mb is 0"):
        eb.build_jobs(4, 8000, 0)


def test_build_plan_for_a_v100():
    plan = eb.build_plan(SPEC)
    assert plan["method"] == "source" and plan["arch_list"] == "7.0" and plan["max_jobs"] == 15
    assert plan["key"] == "vllm-0.21.0-torch2.11.0-cu126-cuda12.8-sm70-cp312"
    assert plan["python_tag"] == "cp312"


def test_key_changes_with_every_part_and_a_pinned_archive():
    base = eb.wheel_key(dict(SPEC, arch_list="7.0"))
    for field, value in [("version", "0.19.1"), ("torch_version", "2.10.0"), ("torch_cuda", "cu128"),
                         ("cuda_version", "12.6"), ("arch_list", "7.0;7.5"), ("python", "/usr/bin/python3.11")]:
        assert eb.wheel_key({**SPEC, "arch_list": "7.0", field: value}) != base
    pinned = eb.wheel_key(dict(SPEC, arch_list="7.0", source_sha256="AB" * 32))
    assert pinned == base + "-srcabababababab"
    assert eb.wheel_key(dict(SPEC, arch_list="7.0;7.5")).endswith("-sm70_75-cp312")
    with pytest.raises(eb.BuildPlanError, match=r"64 hex digits"):
        eb.wheel_key(dict(SPEC, arch_list="7.0", source_sha256="abc"))
    with pytest.raises(eb.BuildPlanError, match=r"expected pythonX.Y"):
        eb.python_tag("python3")


def test_first_host_in_play_order_builds_the_others_copy():
    needs = [{"host": "b", "key": "k1", "needed": True}, None, {"host": "a", "key": "k1", "needed": True},
             {"host": "c", "key": "k2", "needed": True}, {"host": "d", "key": "k1", "needed": False}]
    paths = eb.wheel_paths(needs)
    assert paths == {
        "b": {"path": "build", "key": "k1", "from": None},
        "a": {"path": "copy", "key": "k1", "from": "b"},
        "c": {"path": "build", "key": "k2", "from": None},
        "d": {"path": "none", "key": "k1", "from": None},
    }


def test_a_cached_key_is_copied_by_every_host():
    needs = [{"host": "a", "key": "k1", "needed": True}, {"host": "b", "key": "k1", "needed": True}]
    assert {h: p["path"] for h, p in eb.wheel_paths(needs, ["k1"]).items()} == {"a": "copy", "b": "copy"}
    assert eb.wheel_paths(needs, ["k1"])["a"]["from"] == "cache"


PAGE = """<!DOCTYPE html><html><body>
<a href="../../packages/vllm-0.21.0-py3-none-any.whl#sha256=aa">vllm-0.21.0-py3-none-any.whl</a><br/>
<a href="../../packages/vllm-0.21.0.tar.gz#sha256=05FF89C3">vllm-0.21.0.tar.gz</a><br/>
<a href="https://files.example/x/vllm-0.19.1.tar.gz">vllm-0.19.1.tar.gz</a>
</body></html>"""


def test_sdist_link_resolves_relative_links_and_reads_the_hash():
    got = eb.sdist_link(PAGE, "http://repo:8080/pypi/simple/vllm/", "vllm", "0.21.0")
    assert got == {"url": "http://repo:8080/pypi/packages/vllm-0.21.0.tar.gz", "sha256": "05ff89c3",
                   "filename": "vllm-0.21.0.tar.gz"}
    assert eb.sdist_link(PAGE, "http://repo/simple/vllm/", "vllm", "0.19.1")["sha256"] == ""


def test_sdist_link_refuses_a_page_without_the_release():
    with pytest.raises(eb.BuildPlanError, match=r"lists no source distribution vllm-0.33.0.tar.gz .3 files listed."):
        eb.sdist_link(PAGE, "http://repo/simple/vllm/", "vllm", "0.33.0")


@pytest.mark.parametrize("requested, torch_cuda, release, why", [
    ("", "cu126", "12.6", "the CUDA of torch's cu126 build"),
    (None, "cu128", "12.8", "the CUDA of torch's cu128 build"),
    ("12.4", "cu126", "12.4", "engine_vllm_build_cuda_version is 12.4"),
])
def test_build_cuda_follows_torch_unless_given(requested, torch_cuda, release, why):
    assert eb.build_cuda(requested, torch_cuda) == (release, why)


@pytest.mark.parametrize("requested, torch_cuda, message", [
    ("12", "cu126", "engine_vllm_build_cuda_version is '12'; expected a release such as 12.6"),
    ("", "cpu", "the torch CUDA tag is 'cpu'; expected cuXYZ such as cu126"),
])
def test_build_cuda_refuses(requested, torch_cuda, message):
    with pytest.raises(eb.BuildPlanError) as err:
        eb.build_cuda(requested, torch_cuda)
    assert str(err.value) == message


def test_build_plan_defaults_to_torchs_cuda():
    plan = eb.build_plan(dict(SPEC, cuda_version=""))
    assert (plan["cuda_version"], plan["cuda_home"]) == ("12.6", "/usr/local/cuda-12.6")
    assert plan["key"] == "vllm-0.21.0-torch2.11.0-cu126-cuda12.6-sm70-cp312"


LLAMA = {
    "ref": "0.3.36", "source_sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    "cuda": False, "cuda_architectures": "70", "cuda_version": "12.8", "compiler": "12.2.0", "os": "Debian 12",
    "cmake_args": [],
}


@pytest.mark.parametrize(
    ("change", "key"),
    [({}, "llamacpp-0.3.36-src832db0699007-cpu-cxx12.2.0-debian12"),
     ({"cuda": True}, "llamacpp-0.3.36-src832db0699007-cuda12.8-sm70-cxx12.2.0-debian12"),
     ({"cuda": True, "cuda_architectures": "70;75"},
      "llamacpp-0.3.36-src832db0699007-cuda12.8-sm70_75-cxx12.2.0-debian12"),
     ({"os": "Ubuntu 24.04", "compiler": "13.3.0", "ref": "b6000"},
      "llamacpp-b6000-src832db0699007-cpu-cxx13.3.0-ubuntu24.04")],
)
def test_llamacpp_key_names_what_makes_the_binary(change, key):
    assert eb.llamacpp_key(dict(LLAMA, **change)) == key


def test_llamacpp_key_differs_for_every_input_of_the_build():
    keys = {eb.llamacpp_key(dict(LLAMA, **change)) for change in (
        {}, {"ref": "0.3.37"}, {"source_sha256": "a" * 64}, {"cuda": True}, {"cuda": True, "cuda_version": "12.6"},
        {"cuda": True, "cuda_architectures": "75"}, {"compiler": "12.3.0"}, {"os": "Ubuntu 22.04"},
        {"cmake_args": ["-DCMAKE_C_FLAGS=-O0"]}, {"cmake_args": ["-DCMAKE_CXX_FLAGS=-O0"]},
    )}
    assert len(keys) == 10


def test_llamacpp_key_ignores_cuda_settings_of_a_cpu_build():
    assert eb.llamacpp_key(dict(LLAMA, cuda_version="12.6")) == eb.llamacpp_key(LLAMA)


@pytest.mark.parametrize(
    ("change", "message"),
    [({"source_sha256": ""}, r"engine_llamacpp_source_sha256 is ''; expected 64 hex digits"),
     ({"source_sha256": "abc"}, r"engine_llamacpp_source_sha256 is 'abc'"),
     ({"compiler": ""}, r"no compiler version"),
     ({"cuda": True, "cuda_architectures": ""}, r"no CUDA architecture"),
     ({"os": None}, r"no OS release")],
)
def test_llamacpp_key_refuses_what_cannot_name_a_build(change, message):
    with pytest.raises(eb.BuildPlanError, match=message):
        eb.llamacpp_key(dict(LLAMA, **change))
