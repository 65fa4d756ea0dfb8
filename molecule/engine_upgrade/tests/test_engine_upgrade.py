"""After an upgrade 0.19.1 -> 0.21.0, a refused broken engine, a refused torch pin, a health-gate rollback,
a reinstall of 0.19.1 from the controller's wheel cache and an on-demand rollback: 0.21.0 in service."""

import json

ROOT = "/opt/volta/engines/vllm"
OLD = "vllm-0.19.1-torch2.10.0-cu128"
NEW = "vllm-0.21.0-torch2.11.0-cu126"
BROKEN = "vllm-0.21.0-torch2.11.0-cu130"
REFUSED = "vllm-0.19.1-torch2.11.0-cu126"


def test_rolled_back_to_the_previous_install(host):
    assert host.file(f"{ROOT}/current").linked_to == f"{ROOT}/{NEW}"
    out = host.check_output(f"{ROOT}/current/venv/bin/vllm --version")
    assert out.strip().endswith("0.21.0")


def test_both_finished_installs_are_kept(host):
    for name in (OLD, NEW):
        assert host.file(f"{ROOT}/{name}/.volta-install.json").is_file
        assert host.file(f"{ROOT}/{name}/venv/bin/python").exists


def test_broken_and_refused_installs_left_nothing(host):
    # The broken one failed its smoke test (side_effect checks the message), never got its record, and
    # a later run removed it as an unfinished install; the refused pin never created a directory.
    assert not host.file(f"{ROOT}/{BROKEN}").exists
    assert not host.file(f"{ROOT}/{REFUSED}").exists


def test_facts_follow_the_rollback(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)["engines"]["vllm"]
    assert facts["current"] == NEW and facts["previous"] == OLD and facts["version"] == "0.21.0"
    assert sorted(facts["installs"]) == sorted([OLD, NEW])


def test_reinstall_after_the_health_gate_copied_the_cached_wheel(host):
    # 0.19.1 was built from source by converge, rolled back by the health gate (no longer finished), and
    # installed again by the next run from the controller's wheel cache.
    build = json.loads(host.file(f"{ROOT}/{OLD}/.volta-install.json").content_string)["build"]
    assert build["method"] == "source" and build["path"] == "copy"
    assert build["key"] == "vllm-0.19.1-torch2.10.0-cu128-cuda12.8-sm70-cp311"
    new = json.loads(host.file(f"{ROOT}/{NEW}/.volta-install.json").content_string)["build"]
    assert new["method"] == "source" and new["path"] == "build"


def test_instance_serves_the_rolled_back_engine(host):
    svc = host.service("volta-chat.service")
    assert svc.is_running
    version = json.loads(host.check_output(
        "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:18001/version\").read().decode())'"))
    assert version["version"] == "0.21.0"
    started = host.file("/var/lib/volta-serving/instances/chat.started").content_string.strip()
    assert started.startswith(NEW + "@")
