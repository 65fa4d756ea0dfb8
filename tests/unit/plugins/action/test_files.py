# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.files through ansible-playbook on the controller (local connection, a temporary role).

Checks the action plugin's template rendering (the role's templates/, per-file template_vars,
ansible_managed), then the module: a rerun changes nothing, --check --diff reports a drift without
touching it, and a failed validate writes no file.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
TASK = {
    "name": "Write the instance files",
    "volta.serving.files": {
        "directories": [{"path": "{{ out }}/etc", "mode": "0750", "owner": "{{ me }}", "group": "{{ grp }}"}],
        "files": [
            {"path": "{{ out }}/etc/" + item + ".conf", "template": "unit.j2", "template_vars": {"unit_name": item},
             "owner": "{{ me }}", "group": "{{ grp }}", "validate": "{{ validate }}"}
            for item in ("a", "b")
        ],
    },
}


def run(tmp_path, *extra, validate="grep -q unit %s"):
    role = tmp_path / "roles" / "demo"
    (role / "templates").mkdir(parents=True, exist_ok=True)
    (role / "tasks").mkdir(exist_ok=True)
    template = "{{ ansible_managed | comment }}\nunit={{ unit_name }} port={{ api_port }}\n"
    (role / "templates" / "unit.j2").write_text(template)
    (role / "tasks" / "main.yml").write_text(yaml.safe_dump([TASK], sort_keys=False))
    play = [{"hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": {"out": str(tmp_path), "api_port": 8001, "me": "root", "grp": "root", "validate": validate},
             "roles": ["demo"]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(tmp_path / "roles"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_PYTHON_INTERPRETER=str(REPO / ".venv" / "bin" / "python"), USER="root")
    return subprocess.run([str(PLAYBOOK), "-i", "localhost,", str(tmp_path / "play.yml"), *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, check=False)


def test_templates_per_file_then_no_change_then_check_diff(tmp_path):
    first = run(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "changed=1" in first.stdout
    a = (tmp_path / "etc" / "a.conf").read_text()
    assert a.startswith("#") and a.endswith("unit=a port=8001\n")
    assert (tmp_path / "etc" / "b.conf").read_text().endswith("unit=b port=8001\n")
    again = run(tmp_path)
    assert "changed=0" in again.stdout, again.stdout
    (tmp_path / "etc" / "b.conf").write_text("drift\n")
    dry = run(tmp_path, "--check", "--diff")
    assert "changed=1" in dry.stdout and "-drift" in dry.stdout and "+unit=b port=8001" in dry.stdout
    assert (tmp_path / "etc" / "b.conf").read_text() == "drift\n"


def test_failed_validate_writes_nothing(tmp_path):
    failed = run(tmp_path, validate="grep -q never-there %s")
    assert failed.returncode == 2
    assert f"{tmp_path}/etc/a.conf: the new content fails `grep -q never-there %s` (rc 1)" in failed.stdout
    assert not (tmp_path / "etc" / "a.conf").exists()
