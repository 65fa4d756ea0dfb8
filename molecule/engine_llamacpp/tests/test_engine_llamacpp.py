"""Verify the llama.cpp flavour: expected values come from the scenario (molecule.yml) and the real sdist."""

import json
from pathlib import Path

import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
VARS = SCENARIO["provisioner"]["inventory"]["group_vars"]["all"]
ROOT = "/opt/volta/engines/llamacpp"
NAME = f"llamacpp-{VARS['engine_llamacpp_ref']}-cpu"
CACHE = "/var/cache/volta/engines"
ARCHIVE = VARS["engine_llamacpp_source_url"].rsplit("/", 1)[1]


def test_current_link_names_the_cpu_build(host):
    link = host.file(f"{ROOT}/current")
    assert link.is_symlink and link.linked_to == f"{ROOT}/{NAME}"


def test_llama_server_runs_and_names_its_build(host):
    out = host.run(f"{ROOT}/current/bin/llama-server --version")
    assert out.rc == 0, out.stderr
    text = out.stdout + out.stderr
    assert "version: " in text and "commit " in text, text
    assert "for Linux x86_64" in text, text


def test_built_from_the_pinned_archive_in_the_cache(host):
    archive = host.file(f"{CACHE}/downloads/{ARCHIVE}")
    assert archive.is_file
    digest = host.check_output(f"sha256sum {CACHE}/downloads/{ARCHIVE}").split()[0]
    assert digest == VARS["engine_llamacpp_source_sha256"]
    # Only the llama-server target was built (no other tools), from the vendored tree.
    assert host.file(f"{CACHE}/src/{NAME}/{VARS['engine_llamacpp_source_subdir']}/CMakeLists.txt").is_file
    built = host.check_output(f"ls {CACHE}/build/{NAME}/bin").split()
    assert built == ["llama-server"], built


def test_cmake_used_the_scenario_settings(host):
    cache = host.file(f"{CACHE}/build/{NAME}/CMakeCache.txt").content_string
    assert "GGML_CUDA:BOOL=OFF" in cache
    assert "CMAKE_CXX_FLAGS:STRING=-O0" in cache
    assert "CMAKE_GENERATOR:INTERNAL=Ninja" in cache


def test_install_record_and_local_facts(host):
    record = json.loads(host.file(f"{ROOT}/{NAME}/.volta-install.json").content_string)
    assert record["flavour"] == "llamacpp" and record["version"] == VARS["engine_llamacpp_ref"]
    assert record["source_sha256"] == VARS["engine_llamacpp_source_sha256"]
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)["engines"]["llamacpp"]
    assert facts["current"] == NAME
