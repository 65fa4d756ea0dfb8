"""playbooks/status.yml on a host where volta.serving installed nothing: no warning, nothing listed.

The controller itself is that host (connection local): it has no gateway directory, no start records and
no unit of the collection. The run used to warn "Skipped '/etc/nginx/volta/rotation' ... is not a
directory" (and the same of /var/lib/volta-serving/instances) for finding files in directories that do
not exist. The molecule scenario `site` runs it on a served host (molecule/site/side_effect.yml).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_status_on_a_host_without_the_collection_warns_nothing():
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "playbooks/status.yml", "-i", "localhost,", "-c", "local",
         "-e", "volta_hosts=localhost", "-e", f"ansible_python_interpreter={sys.executable}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "is not a directory" not in out, out[-3000:]
    assert "[WARNING]" not in out, out[-3000:]
    assert '"units": "none installed"' in out, out[-3000:]
