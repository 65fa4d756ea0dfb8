# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.firewall_state module: main() end to end with the host's commands
answered by a table (what systemctl, dpkg-query and nft print on a converged Debian 12 host)."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.modules import firewall_state

# A converged host's table (the role's template as nft 1.0.6 lists it, Debian 12), shortened.
TABLE = """table inet volta_firewall {
\tchain input {
\t\ttype filter hook input priority filter; policy drop;
\t\ttcp dport 22 ip saddr @ssh_v4 accept comment "volta: ssh"
\t}
}
"""


def answers(active="inactive\ninactive\nactive\n", enabled="enabled\n", dpkg="nftables installed\n", table=TABLE):
    def run_command(_self, argv, **_kwargs):
        if argv[:2] == ["systemctl", "is-active"]:
            return 0, active, ""
        if argv[:2] == ["systemctl", "is-enabled"]:
            return 0, enabled, ""
        if argv[0] == "dpkg-query":
            return 0, dpkg, ""
        if argv[1:3] == ["list", "table"]:
            return (0, table, "") if table else (1, "", "Error: No such file or directory")
        raise AssertionError(argv)
    return run_command


def run(capsys, monkeypatch, args, **answer):
    monkeypatch.setattr(AnsibleModule, "run_command", answers(**answer))
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda _self, name, *a, **k: f"/usr/sbin/{name}")
    base = {"backend": "nftables", "others": ["ufw", "firewalld"], "packages": ["nftables"], "service": "nftables",
            "ssh_port": 22}
    with patch_module_args({**base, **args}), pytest.raises(SystemExit) as exc:
        firewall_state.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_converged_host_needs_nothing(capsys, monkeypatch, tmp_path):
    rc, out = run(capsys, monkeypatch, {})
    assert rc == 0 and out["changed"] is False
    assert out["others_active"] == [] and out["packages_missing"] == []
    assert out["service_enabled"] and out["service_active"] and out["live_present"]
    assert out["live_problems"] == [] and out["live_text"] == TABLE


def test_fresh_host(capsys, monkeypatch):
    rc, out = run(capsys, monkeypatch, {}, active="inactive\nactive\ninactive\n", enabled="not-found\n",
                  dpkg="", table="")
    assert rc == 0
    assert out["others_active"] == ["firewalld"] and out["packages_missing"] == ["nftables"]
    assert not out["service_enabled"] and not out["service_active"] and not out["live_present"]
    assert out["live_problems"] == ["the table is not loaded"]


def test_ruleset_compared_with_the_boot_file(capsys, monkeypatch, tmp_path):
    boot = tmp_path / "nftables.conf"
    boot.write_text("old\n")
    boot.chmod(0o755)
    rc, out = run(capsys, monkeypatch, {"ruleset": {"path": str(boot), "content": "new\n"}, "_ansible_diff": True})
    assert rc == 0 and out["changed"] is False
    assert "content" in out["ruleset_changes"]
    assert out["diff"]["before"] == "old\n" and out["diff"]["after"] == "new\n"
    assert boot.read_text() == "old\n"


def test_systemctl_without_systemd_fails_with_the_fix(capsys, monkeypatch):
    rc, out = run(capsys, monkeypatch, {}, active="")
    assert rc == 1
    assert "could not read whether ufw, firewalld, nftables are active" in out["msg"]
    assert "Fix:" in out["msg"]
