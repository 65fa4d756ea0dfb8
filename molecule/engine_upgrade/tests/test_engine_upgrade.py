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


def test_broken_install_never_finished(host):
    assert not host.file(f"{ROOT}/{BROKEN}/.volta-install.json").exists
    arch = host.check_output(
        f"{ROOT}/{BROKEN}/venv/bin/python -I -c 'import json, torch; print(json.dumps(torch.cuda.get_arch_list()))'")
    assert "sm_70" not in json.loads(arch)


def test_facts_follow_the_rollback(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/volta_engines.fact").content_string)["engines"]["vllm"]
    assert facts["current"] == OLD and facts["previous"] == NEW and facts["version"] == "0.19.1"
    assert sorted(facts["installs"]) == sorted([OLD, NEW])
