"""Verify that volta-exporter's account reads the gateway's logs through an ACL, not through group adm.

The account (roles/exporters default exporters_user) is in no supplementary group, so it cannot read what
adm reads (/var/log/auth.log, root:adm 0640 as rsyslog makes it); it may read the gateway's access logs in
/var/log/nginx (www-data:adm 0640 as nginx makes them), also one made after the role ran, as logrotate's
"create 0640 www-data adm" makes the new log after a rotation (open with O_CREAT, then fchown and fchmod).
The log checked is made here as logrotate would make it (the gateway of the scenario makes its own too).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

SCENARIO = yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())
V100 = SCENARIO["platforms"][0]["name"]
ACCOUNT = "volta-exporter"
LOG_DIR = "/var/log/nginx"
# A log made after the role ran, as logrotate makes it (create 0640 www-data adm).
ROTATE = r"""
import grp, os, pwd, sys
path = sys.argv[1]
if os.path.exists(path):
    os.rename(path, path + ".1")
os.umask(0o022)
fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
os.fchown(fd, pwd.getpwnam("www-data").pw_uid, grp.getgrnam("adm").gr_gid)
os.fchmod(fd, 0o640)
os.write(fd, b'10.0.0.9 - - [07/Dec/2026:20:00:00 +0000] "POST /v1/chat/completions HTTP/1.1" 200 12\n')
os.close(fd)
"""


def run(*argv, check=True):
    proc = subprocess.run(["docker", "exec", V100, *argv], capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert proc.returncode == 0, f"{' '.join(argv)}: {proc.stdout} {proc.stderr}"
    return proc


def as_account(*argv):
    """*argv* as the exporter's account with its own groups only (what systemd gives the unit)."""
    return run("setpriv", f"--reuid={ACCOUNT}", f"--regid={ACCOUNT}", "--init-groups", *argv, check=False)


@pytest.fixture(scope="module")
def logs():
    """auth.log (root:adm 0640) if the image has none, and a gateway log made after the role ran."""
    run("sh", "-c", "[ -e /var/log/auth.log ] || { umask 027 && : >/var/log/auth.log && chgrp adm /var/log/auth.log; }")
    new_log = f"{LOG_DIR}/volta-verify.access.log"
    run("python3", "-c", ROTATE, new_log)
    return new_log


def test_the_account_is_in_no_group_but_its_own():
    groups = run("id", "-nG", ACCOUNT).stdout.split()
    assert groups == [ACCOUNT], groups
    assert "adm" not in groups


def test_the_unit_adds_no_group():
    unit = run("systemctl", "cat", "volta-exporter.service").stdout
    assert "SupplementaryGroups" not in unit, unit


def test_the_account_reads_a_gateway_log_made_after_the_role_ran(logs):
    mode = run("stat", "-c", "%a %G", logs).stdout.split()
    assert mode == ["640", "adm"], mode
    read = as_account("cat", logs)
    assert read.returncode == 0, read.stderr
    assert "POST /v1/chat/completions" in read.stdout


def test_the_account_cannot_read_auth_log(logs):
    assert logs
    assert run("stat", "-c", "%a %G", "/var/log/auth.log").stdout.split() == ["640", "adm"]
    read = as_account("cat", "/var/log/auth.log")
    assert read.returncode != 0
    assert "Permission denied" in read.stderr


def test_the_acl_names_the_account_only_on_the_gateway_logs():
    acl = run("getfacl", "-cp", LOG_DIR).stdout.split()
    assert f"user:{ACCOUNT}:r-x" in acl, acl
    assert f"default:user:{ACCOUNT}:r--" in acl, acl
    assert ACCOUNT not in run("getfacl", "-cp", "/var/log").stdout
