"""Verify the llama.cpp flavour: expected values come from the scenario (molecule.yml) and the real sdist.

engine-llamacpp (first in play order) compiles llama-server; engine-llamacpp-b installs it from the
controller's cache with no compile.
"""

import glob
import hashlib
import json
import os
from pathlib import Path
from shlex import quote

import pytest
import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
VARS = SCENARIO["provisioner"]["inventory"]["group_vars"]["all"]
ROOT = "/opt/volta/engines/llamacpp"
NAME = f"llamacpp-{VARS['engine_llamacpp_ref']}-cpu"
CACHE = "/var/cache/volta/engines"
ARCHIVE = VARS["engine_llamacpp_source_url"].rsplit("/", 1)[1]
BUILDER = SCENARIO["platforms"][0]["name"]
# The key names what makes the binary: ref, the source's sha256, CPU, the compiler, the OS, the CMake flags.
KEY_PREFIX = f"llamacpp-{VARS['engine_llamacpp_ref']}-src{VARS['engine_llamacpp_source_sha256'][:12]}-cpu-cxx12."


def build_record(host):
    return json.loads(host.file(f"{ROOT}/{NAME}/.volta-install.json").content_string)["build"]


def controller_entry():
    """The controller's cache entry: (key, recorded sha256, sha256 of the cached binary)."""
    sums = glob.glob(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "llamacpp", "*", "llama-server.sha256"))
    assert len(sums) == 1, sums
    with open(sums[0], encoding="utf-8") as fh:
        recorded = fh.read().split()[0]
    with open(os.path.join(os.path.dirname(sums[0]), "llama-server"), "rb") as fh:
        actual = hashlib.sha256(fh.read()).hexdigest()
    return os.path.basename(os.path.dirname(sums[0])), recorded, actual


def test_current_link_names_the_cpu_build(host):
    link = host.file(f"{ROOT}/current")
    assert link.is_symlink and link.linked_to == f"{ROOT}/{NAME}"


def test_llama_server_runs_and_names_its_build(host):
    out = host.run(f"{ROOT}/current/bin/llama-server --version")
    assert out.rc == 0, out.stderr
    text = out.stdout + out.stderr
    assert "version: " in text and "commit " in text, text
    assert "for Linux x86_64" in text, text


def test_first_host_compiled_the_second_installed_from_the_cache(host):
    build = build_record(host)
    key, recorded, actual = controller_entry()
    assert key.startswith(KEY_PREFIX) and "-debianbookworm-args" in key, key
    assert recorded == actual
    assert build["method"] == "source" and build["key"] == key and build["built_by"] == BUILDER, build
    assert build["binary_sha256"] == recorded
    installed = host.check_output(f"sha256sum {ROOT}/{NAME}/bin/llama-server").split()[0]
    assert installed == recorded
    if host.backend.get_hostname() == BUILDER:
        assert build["path"] == "build", build
    else:
        assert build["path"] == "copy", build
        assert build["copied_from"] == os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "llamacpp", key,
                                                    "llama-server")
        # No compile here: no source tree, no build tree, no build log, no archive downloaded.
        assert not host.file(f"{CACHE}/build").exists
        assert not host.file(f"{CACHE}/src").exists
        assert not host.file(f"{CACHE}/downloads/{ARCHIVE}").exists
        assert not host.run(f"ls {CACHE}/logs 2>/dev/null | grep llama-server").stdout.strip()


def test_built_from_the_pinned_archive_in_the_cache(host):
    if host.backend.get_hostname() != BUILDER:
        pytest.skip("this host compiled nothing (test_first_host_compiled_the_second_installed_from_the_cache)")
    archive = host.file(f"{CACHE}/downloads/{ARCHIVE}")
    assert archive.is_file
    digest = host.check_output(f"sha256sum {CACHE}/downloads/{ARCHIVE}").split()[0]
    assert digest == VARS["engine_llamacpp_source_sha256"]
    # Only the llama-server target was built (no other tools), from the vendored tree.
    assert host.file(f"{CACHE}/src/{NAME}/{VARS['engine_llamacpp_source_subdir']}/CMakeLists.txt").is_file
    built = host.check_output(f"ls {CACHE}/build/{NAME}/bin").split()
    assert built == ["llama-server"], built


def test_cmake_used_the_scenario_settings(host):
    if host.backend.get_hostname() != BUILDER:
        pytest.skip("this host compiled nothing (test_first_host_compiled_the_second_installed_from_the_cache)")
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


# ---------------------------------------------------------------- the tiny GGUF served through the gateway
INSTANCE = VARS["volta_instances"][0]
KEY = VARS["api_gateway_keys"][INSTANCE["name"]]
SOURCE = VARS["volta_models"][INSTANCE["model_source"]]
GGUF = f"/srv/volta/models/{INSTANCE['model_source']}@{SOURCE['sha256'][:12]}/{SOURCE['url'].rsplit('/', 1)[1]}"
# Runs on the host: one chat completion through the gateway (JSON on argv), prints status and body.
ASK = r"""
import json, sys, urllib.error, urllib.request
port, key, model = sys.argv[1], sys.argv[2], sys.argv[3]
body = {"model": model, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "temperature": 0}
headers = {"Content-Type": "application/json", **({"Authorization": "Bearer " + key} if key else {})}
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(), headers)
try:
    with urllib.request.urlopen(req, timeout=60) as resp:
        print(json.dumps({"status": resp.status, "body": json.load(resp)}))
except urllib.error.HTTPError as exc:
    print(json.dumps({"status": exc.code, "body": exc.read().decode(errors="replace")}))
"""


def ask(host, key):
    out = host.run(f"python3 -c {quote(ASK)} {INSTANCE['port']} {quote(key)} {INSTANCE['served_model_name']}")
    assert out.rc == 0, out.stderr
    return json.loads(out.stdout)


def test_the_gguf_was_fetched_and_verified(host):
    assert host.check_output(f"sha256sum {GGUF}").split()[0] == SOURCE["sha256"]


def test_llama_server_runs_the_gguf(host):
    unit = host.file(f"/etc/systemd/system/volta-{INSTANCE['name']}.service").content_string
    assert f"{ROOT}/current/bin/llama-server" in unit and GGUF in unit, unit
    assert host.service(f"volta-{INSTANCE['name']}").is_running


def test_a_real_completion_through_the_gateway_with_the_key(host):
    answer = ask(host, KEY)
    assert answer["status"] == 200, answer
    body = answer["body"]
    assert body["model"] == INSTANCE["served_model_name"], body
    assert body["choices"][0]["message"]["content"].strip(), body
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] == 8, usage
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"], usage


def test_refused_without_the_key_or_with_a_wrong_one(host):
    for key in ("", "not-the-key"):
        answer = ask(host, key)
        assert answer["status"] == 401, answer
