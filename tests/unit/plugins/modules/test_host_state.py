# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.host_state module: main() end to end on a temporary directory, with
dpkg-query and systemctl answered as on a host where nginx is installed and running."""

from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import host_state

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def run_command(_self, argv, **_kwargs):
    if argv[0] == "dpkg-query":
        return 0, "nginx installed\n", ""
    if argv[:2] == ["systemctl", "is-active"]:
        return 3, "active\ninactive\n", ""
    if argv[:2] == ["systemctl", "is-enabled"]:
        return (0, "enabled\n", "") if argv[2] == "nginx.service" else (1, "", "Failed to get unit file state")
    raise AssertionError(argv)


def run(capsys, monkeypatch, args):
    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        host_state.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_reads_packages_units_paths_and_compares_files(capsys, monkeypatch, tmp_path):
    (tmp_path / "etc").mkdir(mode=0o750)
    (tmp_path / "etc" / "keys.conf").write_text("secret\n")
    (tmp_path / "etc" / "keys.conf").chmod(0o640)
    (tmp_path / "list").write_text("/a\n")
    (tmp_path / "default").symlink_to("/nowhere")
    own = {"owner": ME, "group": MY_GROUP}
    rc, out = run(capsys, monkeypatch, {
        "packages": ["nginx", "openssl"], "units": ["nginx.service", "ufw.service"],
        "exists": [str(tmp_path / "default"), str(tmp_path / "none")],
        "read": [str(tmp_path / "list"), str(tmp_path / "missing")],
        "directories": [{"path": str(tmp_path / "etc"), "mode": "0750", **own}],
        "files": [{"path": str(tmp_path / "etc" / "keys.conf"), "mode": "0640", **own,
                   "sha1": hashlib.sha1(b"secret\n").hexdigest()},  # noqa: S324  as the module compares
                  {"path": str(tmp_path / "etc" / "gateway.conf"), "content": "x\n", **own}]})
    assert rc == 0 and out["changed"] is False
    assert out["packages_missing"] == ["openssl"]
    assert out["units"] == {"nginx.service": {"active": True, "enabled": True},
                            "ufw.service": {"active": False, "enabled": False}}
    assert out["existing"] == [str(tmp_path / "default")]
    assert out["contents"] == {str(tmp_path / "list"): "/a\n", str(tmp_path / "missing"): None}
    assert out["changed_paths"] == [str(tmp_path / "etc" / "gateway.conf")]
    assert out["paths"][str(tmp_path / "etc" / "gateway.conf")] == ["created"]
    assert not (tmp_path / "etc" / "gateway.conf").exists()


def test_a_changed_secret_is_a_content_change(capsys, monkeypatch, tmp_path):
    (tmp_path / "keys.conf").write_text("secret\n")
    (tmp_path / "keys.conf").chmod(0o640)
    rc, out = run(capsys, monkeypatch, {"files": [{"path": str(tmp_path / "keys.conf"), "mode": "0640",
                                                  "owner": ME, "group": MY_GROUP, "sha1": "0" * 40}]})
    assert rc == 0 and out["changed_paths"] == [str(tmp_path / "keys.conf")]
    assert out["paths"][str(tmp_path / "keys.conf")] == ["content"]
    assert "0" * 40 not in json.dumps(out)
