# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.check answers as ansible.builtin.assert does, and renders fail_msg only when a condition fails.

Each case runs twice in one real ansible-playbook (local connection): once with ansible.builtin.assert, once
with volta.serving.check, with the same arguments. The builtin's registered result is the expected one.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[4]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"

# name: (the arguments of both tasks, the task's vars)
CASES = {
    "fails_with_a_templated_message": (
        {"that": ["__problems | length == 0"], "fail_msg": "{{ inventory_hostname }}: {{ __problems | join('; ') }}"},
        {"__problems": "{{ ['no port', 'no model'] | map('upper') | list }}"},
    ),
    "fails_with_the_msg_alias": ({"that": "1 == 2", "msg": "{{ 'one is ' ~ __one }}"}, {"__one": 1}),
    "fails_with_a_list_message": ({"that": ["true", "__n > 3"], "fail_msg": ["{{ __n }} is small", "plain"]},
                                  {"__n": 2}),
    "fails_with_the_default_message": ({"that": "false"}, {}),
    "passes_with_its_report": ({"that": "__n > 1", "success_msg": "{{ __n }} instances", "fail_msg": "{{ __n }} is 1"},
                               {"__n": 2}),
    "passes_quietly": ({"that": ["__n == 2"], "quiet": True, "fail_msg": "{{ __n }} is not 2"}, {"__n": 2}),
}
# Passing, with a failure message that cannot be rendered: the builtin renders it anyway and fails.
UNRENDERABLE = ({"that": "true", "fail_msg": "{{ __missing.key }}", "success_msg": "fine"}, {})
# Failing, with a failure message that renders to a number.
NUMBER = ({"that": "false", "fail_msg": "{{ __n }}"}, {"__n": 2})


def _task(action, name, args, variables):
    return {"name": f"{action} {name}", action: copy.deepcopy(args), "vars": copy.deepcopy(variables),
            "ignore_errors": True, "register": f"__{action.replace('.', '_')}_{name}"}  # fmt: skip


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("check")
    cases = {**CASES, "unrenderable": UNRENDERABLE, "number": NUMBER}
    tasks = [_task(action, name, args, variables)
             for name, (args, variables) in cases.items()
             for action in ("ansible.builtin.assert", "volta.serving.check")]  # fmt: skip
    names = [task["register"] for task in tasks]
    out = tmp / "results.json"
    tasks.append({"name": "Write the results", "ansible.builtin.copy": {
        "dest": str(out), "content": "{{ {" + ", ".join(f"'{n}': {n}" for n in names) + "} | to_json }}"}})
    playbook = tmp / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LOCAL_TEMP": str(tmp / "tmp")}  # fmt: skip
    proc = subprocess.run([str(ANSIBLE_PLAYBOOK), str(playbook), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


KEYS = ("failed", "msg", "assertion", "evaluated_to", "changed")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_result_is_the_builtin_assert_s(results, name):
    builtin = results[f"__ansible_builtin_assert_{name}"]
    ours = results[f"__volta_serving_check_{name}"]
    assert {k: ours.get(k) for k in KEYS} == {k: builtin.get(k) for k in KEYS}


def test_the_failing_messages_are_rendered(results):
    assert results["__volta_serving_check_fails_with_a_templated_message"]["msg"] == "localhost: NO PORT; NO MODEL"
    assert results["__volta_serving_check_fails_with_the_msg_alias"]["msg"] == "one is 1"
    assert results["__volta_serving_check_fails_with_a_list_message"]["msg"] == ["2 is small", "plain"]


def test_a_passing_check_does_not_render_its_failure_message(results):
    builtin = results["__ansible_builtin_assert_unrenderable"]
    assert builtin["failed"] is True and "__missing" in builtin["msg"]
    ours = results["__volta_serving_check_unrenderable"]
    assert ours.get("failed", False) is False
    assert ours["msg"] == "fine"


def test_a_message_that_is_not_text_is_refused_when_rendered(results):
    builtin = results["__ansible_builtin_assert_number"]
    assert builtin["failed"] is True and "str_or_list_of_str" in builtin["msg"]
    ours = results["__volta_serving_check_number"]
    assert ours["failed"] is True
    assert ours["msg"] == "fail_msg rendered to int, not a string or a list of strings"
