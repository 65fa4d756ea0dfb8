# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/exporters: the gateway's logs are granted to the exporter's account by ACL, never through group adm.

The role's script (vars/main.yml __exporters_log_acl_script) runs under sh with stand-ins for getfacl and
setfacl that keep each path's ACL entries in a file beside it (the controller has no acl package; the
monitoring scenario runs the real ones, molecule/monitoring/tests/test_exporter_logs.py). read prints each
path whose entry is missing, grant sets them, and a second read prints nothing (the role's task then
changes nothing). The account task and the unit give the account no group.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROLE = Path(__file__).resolve().parents[3] / "roles" / "exporters"
USER = "volta-exporter"

GETFACL = r"""
import sys
path = sys.argv[-1]
try:
    print(open(path + ".acl").read(), end="")
except FileNotFoundError:
    pass
"""
SETFACL = r"""
import sys
spec, path = sys.argv[2], sys.argv[-1]
perms = {"r": "r--", "rx": "r-x"}
lines = []
for entry in spec.split(","):
    parts = entry.split(":")
    default = parts[0] == "d"
    kind, user, perm = parts[-3:]
    lines.append(("default:" if default else "") + f"user:{user}:{perms[perm]}")
with open(path + ".acl", "a") as out:
    out.write("".join(line + "\n" for line in lines))
with open(sys.argv[0] + ".log", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
"""


def script():
    return yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__exporters_log_acl_script"]


@pytest.fixture
def tools(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("getfacl", GETFACL), ("setfacl", SETFACL)):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n{body}")
        tool.chmod(0o755)
    logs = tmp_path / "nginx"
    logs.mkdir()
    for name in ("volta-chat.access.log", "volta-chat.error.log"):
        (logs / name).write_text("")
    return bin_dir, logs


def run(tools, what):
    bin_dir, logs = tools
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run(["sh", "-c", script(), "sh", what, str(logs), USER, f"{logs}/volta-*.access.log"],
                          env=env, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_read_names_what_is_missing_grant_sets_it_and_a_second_read_finds_nothing(tools):
    _bin, logs = tools
    access = f"{logs}/volta-chat.access.log"
    assert run(tools, "read") == [str(logs), str(logs), access]
    run(tools, "grant")
    assert (logs.parent / "nginx.acl").read_text().splitlines() == [
        f"user:{USER}:r-x", f"default:user:{USER}:r--"]
    assert Path(access + ".acl").read_text().splitlines() == [f"user:{USER}:r--"]
    # Only the files the glob names (the access logs); the directory's default ACL covers the ones made later.
    assert not Path(f"{logs}/volta-chat.error.log.acl").exists()
    assert run(tools, "read") == []


def test_an_entry_that_the_mask_cuts_counts_as_missing(tools):
    _bin, logs = tools
    (logs.parent / "nginx.acl").write_text(f"user:{USER}:r-x\t#effective:---\ndefault:user:{USER}:r--\n")
    assert str(logs) in run(tools, "read")


def test_the_account_has_no_group_and_the_unit_none_either():
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    account = next(t for t in tasks if t.get("name") == "Create the exporter's account")["ansible.builtin.user"]
    assert account["groups"] == [] and account["append"] is False
    unit = (ROLE / "templates" / "volta-exporter.service.j2").read_text()
    assert "SupplementaryGroups" not in unit
    assert "exporters_log_groups" not in (ROLE / "meta" / "argument_specs.yml").read_text()
    assert "acl" in yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__exporters_host_packages"]
