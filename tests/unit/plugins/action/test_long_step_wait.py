# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.long_step_wait through ansible-playbook on the controller (local connection).

A step started with async that fails with a full disk, or with its index unreachable, gets the result
``problem`` in words with the numbers (df and du of space_path, read on the host) or the index; any other
failure, and a step that passed, get none.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
INDEX = "http://index.invalid:8080/simple"


def run(tmp_path, script, finish=False):
    log, space = tmp_path / "step.log", tmp_path / "install"
    space.mkdir(exist_ok=True)
    (space / "half").write_bytes(b"x" * 8192)
    tasks = [
        {"name": "Start", "ansible.builtin.command": {"argv": ["sh", "-c", f"{{ {script}; }} >{log} 2>&1"]},
         "async": 60, "poll": 0, "register": "job"},
        {"name": "Wait", "volta.serving.long_step_wait": {
            "jid": "{{ job.ansible_job_id }}", "log": str(log), "step": "install torch", "interval": 0.2,
            "space_path": str(space), "index_urls": [INDEX, "http://other.invalid/whl"], "finish": finish},
         "register": "waited", "failed_when": False},
        {"name": "Show", "ansible.builtin.copy": {"content": "{{ waited | to_json }}", "dest": str(tmp_path / "r")}},
    ]
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=str(REPO / ".venv" / "bin" / "python"))
    done = subprocess.run([str(PLAYBOOK), "-i", "localhost,", str(tmp_path / "play.yml")],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp_path / "r").read_text())


def test_a_full_disk_gives_the_bytes_written_and_free(tmp_path):
    result = run(tmp_path, "echo 'Caused by: failed to write: No space left on device (os error 28)'; exit 2")
    assert result["rc"] == 2
    assert result["problem"].startswith("localhost: the disk filled during 'install torch' (No space left on "
                                        "device: Caused by: failed to write: No space left on device (os error 28)); "
                                        f"{tmp_path}/install had ")
    assert " bytes) written when it stopped, and " in result["problem"]
    assert " bytes) are free on /" in result["problem"] and "fix: free space on /" in result["problem"]


def test_an_unreachable_index_is_named(tmp_path):
    result = run(tmp_path, f"echo 'error: Failed to fetch: `{INDEX}/torch/`'; "
                           "echo '  Caused by: tcp connect error: Connection refused (os error 111)'; exit 2")
    assert result["problem"] == (
        f"localhost: the package index {INDEX} could not be reached during 'install torch' (Caused by: tcp "
        f"connect error: Connection refused (os error 111)); fix: make {INDEX} answer from localhost (the index "
        "server, DNS, proxy, firewall), then rerun: the unfinished install is removed and made again.")


@pytest.mark.parametrize(("script", "problem"), [("echo 'error: no matching version'; exit 1", ""),
                                                 ("echo fine", None)])
def test_other_outcomes_have_no_problem(tmp_path, script, problem):
    assert run(tmp_path, script).get("problem") == problem


def test_finish_fails_a_failed_step_with_its_problem_and_log_end_and_removes_the_status_file(tmp_path):
    # (The test's task has failed_when: false, so that its result can be read: the message is the failure's.)
    result = run(tmp_path, "echo one; echo 'error: no matching version'; exit 3", finish=True)
    assert result["rc"] == 3
    assert result["msg"] == (f" install torch failed (exit status 3); the last lines of {tmp_path}/step.log: "
                             "one | error: no matching version")
    assert not list((Path.home() / ".ansible_async").glob(result["ansible_job_id"]))


def test_finish_passes_a_step_that_passed(tmp_path):
    result = run(tmp_path, "echo fine", finish=True)
    assert result["rc"] == 0 and "install torch failed" not in result.get("msg", "")
    assert not list((Path.home() / ".ansible_async").glob(result["ansible_job_id"]))


def test_a_step_without_a_log_shows_its_time_only(tmp_path):
    # A module run with async (a download by get_url) writes no log: the progress line has no log part.
    tasks = [
        {"name": "Start", "ansible.builtin.command": {"argv": ["sleep", "1.5"]}, "async": 60, "poll": 0,
         "register": "job"},
        {"name": "Wait", "volta.serving.long_step_wait": {
            "jid": "{{ job.ansible_job_id }}", "step": "download of x", "interval": 0.2, "report_every": 0.5}},
    ]
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=str(REPO / ".venv" / "bin" / "python"))
    done = subprocess.run([str(PLAYBOOK), "-i", "localhost,", str(tmp_path / "play.yml")],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("localhost: download of x: ")]
    assert lines and all(line.endswith("s elapsed") for line in lines), done.stdout
