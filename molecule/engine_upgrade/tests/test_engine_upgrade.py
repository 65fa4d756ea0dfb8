"""After upgrade 0.19.1 -> 0.21.0, a refused broken engine and a rollback: 0.19.1 in service again."""

import json

ROOT = "/opt/volta/engines/vllm"
OLD = "vllm-0.19.1-torch2.10.0-cu128"
NEW = "vllm-0.21.0-torch2.11.0-cu126"
BROKEN = "vllm-0.21.0-torch2.11.0-cu130"


def test_rolled_back_to_the_previous_install(host):
    assert host.file(f"{ROOT}/current").linked_to == f"{ROOT}/{OLD}"
    out = host.check_output(f"{ROOT}/current/venv/bin/vllm --version")
    assert out.strip().endswith("0.19.1")


def test_both_finished_installs_are_kept(host):
    for name in (OLD, NEW):
        assert host.file(f"{ROOT}/{name}/.volta-install.json").is_file
        assert host.file(f"{ROOT}/{name}/venv/bin/python").exists


def test_broken_install_never_finished_and_was_pruned(host):
    # It failed its smoke test (side_effect checks the message), so it never got its record, and
    # the next run (the health-gate step) removed it as an unfinished install.
    assert not host.file(f"{ROOT}/{BROKEN}").exists


def test_facts_follow_the_rollback(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)["engines"]["vllm"]
    assert facts["current"] == OLD and facts["previous"] == NEW and facts["version"] == "0.19.1"
    assert sorted(facts["installs"]) == sorted([OLD, NEW])


DIES = "vllm-0.19.1-torch2.11.0-cu126"


def test_install_that_failed_its_health_check_is_not_finished(host):
    # Rolled back by the health gate: its record is gone, so it is never a rollback target.
    assert host.file(f"{ROOT}/{DIES}/venv/bin/python").exists
    assert not host.file(f"{ROOT}/{DIES}/.volta-install.json").exists


def test_instance_serves_the_rolled_back_engine(host):
    svc = host.service("volta-chat.service")
    assert svc.is_running
    version = json.loads(host.check_output(
        "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:18001/version\").read().decode())'"))
    assert version["version"] == "0.19.1"
    started = host.file("/var/lib/volta-serving/instances/chat.started").content_string.strip()
    assert started.startswith(OLD + "@")
