# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the volta.serving.gpu_facts action plugin: the wait for a host that does not answer.

The module call (ActionBase._execute_module) is replaced by a script of results and connection failures, the
clock and the sleep by a counter; the real wait against hosts that never answer is in
test_serving_plan.py::test_an_unreachable_host_is_waited_for_then_stopped_with_the_reason.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.volta.serving.plugins.action.gpu_facts import ActionModule

READ = {"changed": False, "ansible_facts": {"volta_gpu": {"status": "ok", "gpu_count": 1}}}
REFUSED = "ssh: connect to host 192.0.2.1 port 22: Connection refused"


class Connection:
    """Counts the resets between attempts."""

    def __init__(self):
        self._shell = SimpleNamespace(tmpdir=None)
        self.resets = 0

    def reset(self):
        self.resets += 1


def make_action(args, script):
    """An action whose module calls answer from *script* (a result, or an exception to raise) in turn."""
    task = SimpleNamespace(args=args, async_val=0, check_mode=False, action="volta.serving.gpu_facts")
    action = ActionModule(task, Connection(), play_context=None, loader=None, templar=Templar(loader=DataLoader()))
    now = [0.0]
    action.clock = lambda: now[0]
    action.sleep = lambda seconds: now.__setitem__(0, now[0] + seconds)
    action.calls = []

    def execute_module(module_name, module_args, task_vars):
        action.calls.append((module_name, dict(module_args)))
        answer = script[len(action.calls) - 1]
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    action._execute_module = execute_module
    return action


def test_a_host_that_answers_is_read_once_without_the_option():
    action = make_action({"nvidia_smi": "nvidia-smi", "connect_wait": 20}, [READ])
    result = action.run(task_vars={})
    assert result["ansible_facts"] == READ["ansible_facts"]
    assert action.calls == [("volta.serving.gpu_facts", {"nvidia_smi": "nvidia-smi"})]
    assert action._connection.resets == 0


def test_a_host_that_comes_back_within_the_wait_is_read():
    action = make_action({"connect_wait": 20}, [AnsibleConnectionFailure(REFUSED)] * 3 + [READ])
    result = action.run(task_vars={})
    assert not result.get("failed")
    assert result["ansible_facts"] == READ["ansible_facts"]
    assert len(action.calls) == 4
    assert action._connection.resets == 3


def test_a_host_that_never_answers_fails_after_the_wait_naming_the_error():
    action = make_action({"connect_wait": 5}, [AnsibleConnectionFailure(REFUSED)] * 10)
    result = action.run(task_vars={})
    assert result["failed"] is True
    assert result["unreachable_after"] == 5
    assert result["msg"] == f"timed out waiting 5 s for the host to answer: {REFUSED}"
    # Tried at 0, 1, ... 5 seconds: six attempts, then no more.
    assert len(action.calls) == 6


def test_without_a_wait_an_unreachable_host_stays_unreachable():
    action = make_action({}, [AnsibleConnectionFailure(REFUSED)])
    with pytest.raises(AnsibleConnectionFailure, match="Connection refused"):
        action.run(task_vars={})
    assert len(action.calls) == 1


def test_a_failed_read_of_a_host_that_answers_is_not_retried():
    failed = {"failed": True, "msg": "nvidia-smi printed a line that is none of the known formats: 'x'"}
    action = make_action({"connect_wait": 20}, [failed])
    result = action.run(task_vars={})
    assert result["failed"] is True
    assert result["msg"] == failed["msg"]
    assert "unreachable_after" not in result
    assert len(action.calls) == 1


@pytest.mark.parametrize("given", [-1, "soon", None])
def test_a_wait_that_is_not_seconds_is_refused_before_any_call(given):
    action = make_action({"connect_wait": given}, [])
    result = action.run(task_vars={})
    assert result["failed"] is True
    assert result["msg"] == f"connect_wait {given!r} is not a number of seconds (0 or more)."
    assert action.calls == []
