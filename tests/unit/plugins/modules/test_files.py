# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.files module: main() end to end on a temporary directory."""

from __future__ import annotations

import grp
import json
import os
import pwd
import stat

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import files

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def run(capsys, args, tmp_path):
    args = {"_ansible_tmpdir": str(tmp_path / "tmp"), "_ansible_remote_tmp": str(tmp_path / "tmp"), **args}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        files.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def spec(tmp_path, **extra):
    return {"directories": [{"path": str(tmp_path / "etc"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
            "files": [{"path": str(tmp_path / "etc" / "a.conf"), "content": "a = 1\n", "owner": ME,
                       "group": MY_GROUP, "mode": "0640", **extra}]}


def test_creates_then_changes_nothing(capsys, tmp_path):
    rc, out = run(capsys, spec(tmp_path), tmp_path)
    assert rc == 0 and out["changed"] is True
    assert out["changed_paths"] == [str(tmp_path / "etc"), str(tmp_path / "etc" / "a.conf")]
    target = tmp_path / "etc" / "a.conf"
    assert target.read_text() == "a = 1\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "etc").stat().st_mode) == 0o750
    rc, again = run(capsys, spec(tmp_path), tmp_path)
    assert (rc, again["changed"], again["changed_paths"]) == (0, False, [])
    assert not [p for p in (tmp_path / "etc").iterdir() if p.name.startswith(".volta-")]


def test_content_and_mode_drift_are_reported_with_a_diff(capsys, tmp_path):
    run(capsys, spec(tmp_path), tmp_path)
    target = tmp_path / "etc" / "a.conf"
    target.write_text("a = 2\n")
    target.chmod(0o600)
    _rc, out = run(capsys, {**spec(tmp_path), "_ansible_diff": True}, tmp_path)
    assert out["paths"][str(target)] == ["content", "mode 0600 -> 0640"]
    assert out["diff"] == [{"before_header": str(target), "after_header": str(target),
                            "before": "a = 2\n", "after": "a = 1\n"}]
    assert target.read_text() == "a = 1\n"


def test_check_mode_reports_and_changes_nothing(capsys, tmp_path):
    _rc, out = run(capsys, {**spec(tmp_path), "_ansible_check_mode": True}, tmp_path)
    assert out["changed"] is True and out["changed_paths"][0] == str(tmp_path / "etc")
    assert not (tmp_path / "etc").exists()


def test_secret_content_never_in_the_diff(capsys, tmp_path):
    _rc, out = run(capsys, {**spec(tmp_path, secret=True), "_ansible_diff": True}, tmp_path)
    texts = [d["after"] for d in out["diff"]] + [d["before"] for d in out["diff"]]
    assert "a = 1" not in json.dumps(out["diff"])  # the invocation has it: such a task sets no_log
    assert "(secret: content not shown)\n" in texts


def test_failed_validation_changes_nothing(capsys, tmp_path):
    (tmp_path / "etc").mkdir()
    other = {"path": str(tmp_path / "etc" / "b.conf"), "content": "b\n", "owner": ME, "group": MY_GROUP}
    args = spec(tmp_path, validate="grep -q never %s")
    args["files"].insert(0, other)
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1
    assert out["msg"].startswith(f"{tmp_path / 'etc' / 'a.conf'}: the new content fails `grep -q never %s` (rc 1)")
    assert out["msg"].endswith("Nothing was changed.")
    assert sorted(p.name for p in (tmp_path / "etc").iterdir()) == []
    assert stat.S_IMODE((tmp_path / "etc").stat().st_mode) != 0o750


def test_passing_validation_writes(capsys, tmp_path):
    rc, _out = run(capsys, spec(tmp_path, validate="grep -q a %s"), tmp_path)
    assert rc == 0 and (tmp_path / "etc" / "a.conf").read_text() == "a = 1\n"


def test_absent_removes_a_file_once(capsys, tmp_path):
    run(capsys, spec(tmp_path), tmp_path)
    gone = {"files": [{"path": str(tmp_path / "etc" / "a.conf"), "state": "absent"}]}
    rc, out = run(capsys, gone, tmp_path)
    assert out["paths"] == {str(tmp_path / "etc" / "a.conf"): ["removed"]}
    assert not (tmp_path / "etc" / "a.conf").exists()
    assert rc == 0
    _rc, again = run(capsys, gone, tmp_path)
    assert again["changed"] is False


def test_a_link_where_a_file_is_wanted_is_refused(capsys, tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "real").write_text("x")
    (tmp_path / "etc" / "a.conf").symlink_to(tmp_path / "real")
    rc, out = run(capsys, spec(tmp_path), tmp_path)
    assert rc == 1
    link = tmp_path / "etc" / "a.conf"
    assert out["msg"] == f"{link} is a link; this task writes plain files only. Nothing was changed."
    assert (tmp_path / "real").read_text() == "x"


def test_unknown_owner_is_named(capsys, tmp_path):
    args = spec(tmp_path)
    args["files"][0]["owner"] = "no-such-user-volta"
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1 and out["msg"] == (f"{tmp_path / 'etc' / 'a.conf'}: owner no-such-user-volta does not exist on "
                                      "this host; create it first (or name an existing one). Nothing was changed.")
    assert not (tmp_path / "etc").exists()
    # In check mode an earlier task would create it: reported as a change, not a failure.
    rc, out = run(capsys, {**args, "_ansible_check_mode": True}, tmp_path)
    assert rc == 0 and out["changed_paths"] == [str(tmp_path / "etc"), str(tmp_path / "etc" / "a.conf")]


def test_bad_mode_is_named(capsys, tmp_path):
    args = spec(tmp_path)
    args["files"][0]["mode"] = "644x"
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1 and out["msg"] == f"{tmp_path / 'etc' / 'a.conf'}: mode '644x' is not an octal mode such as '0644'"


def test_exists_reads_paths_after_the_changes(capsys, tmp_path):
    client = tmp_path / "venv" / "bin" / "hf"
    args = {**spec(tmp_path), "exists": [str(tmp_path / "etc" / "a.conf"), str(client)]}
    _rc, out = run(capsys, args, tmp_path)
    assert out["exists"] == {str(tmp_path / "etc" / "a.conf"): True, str(client): False}
    client.parent.mkdir(parents=True)
    client.symlink_to(tmp_path / "nowhere")
    _rc, out = run(capsys, args, tmp_path)
    assert out["changed"] is False and out["exists"][str(client)] is False  # a dangling link is no program
    (tmp_path / "nowhere").write_text("")
    _rc, out = run(capsys, args, tmp_path)
    assert out["exists"][str(client)] is True


def test_exists_in_check_mode_reads_the_host_as_it_is(capsys, tmp_path):
    _rc, out = run(capsys, {**spec(tmp_path), "exists": [str(tmp_path / "etc")], "_ansible_check_mode": True},
                   tmp_path)
    assert out["changed"] is True and out["exists"] == {str(tmp_path / "etc"): False}


def _checker(tmp_path):
    """A helper program that accepts a file containing 'ok' (the shape of nginx-validate and verify-unit)."""
    return {"path": str(tmp_path / "etc" / "check"), "content": "#!/bin/sh\ngrep -q ok \"$1\"\n", "owner": ME,
            "group": MY_GROUP, "mode": "0755", "helper": True}


def test_a_helper_is_written_before_the_files_it_checks(capsys, tmp_path):
    args = spec(tmp_path, content="ok\n", validate=f"{tmp_path / 'etc' / 'check'} %s")
    args["files"].insert(0, _checker(tmp_path))
    rc, out = run(capsys, args, tmp_path)
    assert rc == 0, out
    assert out["changed_paths"] == [str(tmp_path / "etc"), str(tmp_path / "etc" / "check"),
                                    str(tmp_path / "etc" / "a.conf")]
    assert (tmp_path / "etc" / "a.conf").read_text() == "ok\n"
    _rc, again = run(capsys, args, tmp_path)
    assert again["changed"] is False


def test_a_file_its_helper_refuses_leaves_only_the_helper_written(capsys, tmp_path):
    args = spec(tmp_path, content="bad\n", validate=f"{tmp_path / 'etc' / 'check'} %s")
    args["files"].insert(0, _checker(tmp_path))
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1
    assert out["msg"].startswith(f"{tmp_path / 'etc' / 'a.conf'}: the new content fails ")
    assert out["msg"].endswith(f"Nothing else was changed (written before the checks: {tmp_path / 'etc'}, "
                               f"{tmp_path / 'etc' / 'check'}).")
    assert sorted(p.name for p in (tmp_path / "etc").iterdir()) == ["check"]


def test_a_helper_in_check_mode_is_not_written(capsys, tmp_path):
    args = spec(tmp_path, content="ok\n", validate=f"{tmp_path / 'etc' / 'check'} %s")
    args["files"].insert(0, _checker(tmp_path))
    rc, out = run(capsys, {**args, "_ansible_check_mode": True}, tmp_path)
    assert rc == 0 and str(tmp_path / "etc" / "check") in out["changed_paths"]
    assert not (tmp_path / "etc").exists()


def test_a_checked_helper_is_refused(capsys, tmp_path):
    args = spec(tmp_path)
    args["files"].insert(0, {**_checker(tmp_path), "validate": "true %s"})
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1
    assert out["msg"] == (f"{tmp_path / 'etc' / 'check'}: a helper is written before the checks and is neither "
                          "checked nor removed; drop validate (or state absent) or helper. Nothing was changed.")
    assert not (tmp_path / "etc").exists()


def _keys(tmp_path, *names):
    """A key-file call with a manifest (the shape of api_gateway's keys.yml) writing names in etc/."""
    etc = tmp_path / "etc"
    return {"directories": [{"path": str(etc), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
            "files": [{"path": str(etc / n), "content": f"{n}\n", "owner": ME, "group": MY_GROUP, "mode": "0600",
                       "secret": True} for n in names],
            "manifest": {"path": str(etc / ".list"), "paths": [str(etc / n) for n in names],
                         "match": f"^{etc}/[^/]+\\.(env|key)$", "secret": True}}


def test_a_manifest_removes_what_an_earlier_run_wrote_and_no_longer_writes(capsys, tmp_path):
    if os.getuid() != 0:
        pytest.skip("the list of written files is root:root")
    etc = tmp_path / "etc"
    rc, out = run(capsys, _keys(tmp_path, "a.env", "b.key"), tmp_path)
    assert rc == 0 and out["changed_paths"][-1] == str(etc / ".list")
    assert (etc / ".list").read_text() == f"{etc / 'a.env'}\n{etc / 'b.key'}\n"
    assert stat.S_IMODE((etc / ".list").stat().st_mode) == 0o600
    (etc / "other.key").write_text("another program's\n")  # never listed: never removed
    _rc, again = run(capsys, _keys(tmp_path, "a.env", "b.key"), tmp_path)
    assert again["changed"] is False
    _rc, fewer = run(capsys, {**_keys(tmp_path, "a.env"), "_ansible_diff": True}, tmp_path)
    assert fewer["paths"][str(etc / "b.key")] == ["removed"]
    assert sorted(p.name for p in etc.iterdir()) == [".list", "a.env", "other.key"]
    assert (etc / ".list").read_text() == f"{etc / 'a.env'}\n"
    assert "b.key\n" not in json.dumps(fewer["diff"])  # a removed secret file's content is not shown


def test_a_manifest_ignores_listed_paths_outside_its_match(capsys, tmp_path):
    if os.getuid() != 0:
        pytest.skip("the list of written files is root:root")
    etc = tmp_path / "etc"
    etc.mkdir()
    outside = tmp_path / "elsewhere.key"
    outside.write_text("x\n")
    (etc / ".list").write_text(f"{outside}\n{etc / 'a.env'}\n")
    (etc / "a.env").write_text("old\n")
    _rc, check = run(capsys, {**_keys(tmp_path), "_ansible_check_mode": True}, tmp_path)
    assert check["paths"][str(etc / "a.env")] == ["removed"] and (etc / "a.env").exists()
    rc, _out = run(capsys, _keys(tmp_path), tmp_path)
    assert rc == 0 and not (etc / "a.env").exists() and outside.exists()
    assert (etc / ".list").read_text() == ""


def test_no_manifest_is_written_with_nothing_to_list(capsys, tmp_path):
    rc, out = run(capsys, _keys(tmp_path), tmp_path)
    assert rc == 0 and not (tmp_path / "etc" / ".list").exists()
    assert str(tmp_path / "etc" / ".list") not in out["paths"]


def test_a_bad_manifest_match_is_named(capsys, tmp_path):
    args = _keys(tmp_path, "a.env")
    args["manifest"]["match"] = "(["
    rc, out = run(capsys, args, tmp_path)
    assert rc == 1
    assert out["msg"].startswith(f"{tmp_path / 'etc' / '.list'}: match '([' is not a regular expression (")
    assert not (tmp_path / "etc").exists()


@pytest.mark.parametrize("check", ["grep -q a %s", "grep -q never %s"])
def test_validation_needs_no_remote_tmp_and_leaves_no_file(capsys, tmp_path, monkeypatch, check):
    # A fresh host has no ~/.ansible/tmp (Ansible's remote_tmp): a module that asks for module.tmpdir then
    # creates it, warning "Module remote_tmp ... did not exist". The validation copy goes to the system's
    # temporary directory, and is removed whether the check passes or fails.
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(system_tmp))
    args = {"_ansible_remote_tmp": str(tmp_path / "remote-tmp"), **spec(tmp_path, validate=check)}
    with patch_module_args(args), pytest.raises(SystemExit):
        files.main()
    out = json.loads(capsys.readouterr().out)
    assert not out.get("warnings"), out
    assert not (tmp_path / "remote-tmp").exists()
    assert list(system_tmp.iterdir()) == []
