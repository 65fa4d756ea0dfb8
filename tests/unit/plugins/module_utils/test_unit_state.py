# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _unit_state: the engine units' state as engine_service acts on it."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _unit_state

CMD_R = {"name": "command-r", "engine": "vllm"}
NEW = "vllm-0.21.0-torch2.11.0-cu126@abc"


def test_systemctl_lines():
    assert _unit_state.systemctl_lines(["a", "b"], "active\ninactive\n") == {"a": "active", "b": "inactive"}
    assert _unit_state.systemctl_lines(["a"], "") == {"a": ""}


class _Module:
    """The two AnsibleModule methods systemctl_states uses; answers recorded from systemd 252 (Debian 12)."""

    def __init__(self, systemctl="/usr/bin/systemctl"):
        self.systemctl, self.calls = systemctl, []

    def get_bin_path(self, name, required=False):
        if self.systemctl is None and required:
            raise SystemExit(f"Failed to find required executable {name}")
        return self.systemctl

    def run_command(self, argv):
        self.calls.append(argv[1:])
        answers = {("is-active", "nginx"): (0, "active\n"), ("is-enabled", "nginx"): (0, "enabled\n"),
                   ("is-active", "nvidia-persistenced"): (3, "inactive\n"),
                   ("is-enabled", "nvidia-persistenced"): (0, "enabled\n"),
                   # No unit file: is-active says inactive, is-enabled prints only to stderr.
                   ("is-active", "gone"): (3, "inactive\n"), ("is-enabled", "gone"): (1, "")}
        rc, out = answers[tuple(argv[1:])]
        return rc, out, "" if out else "Failed to get unit file state for gone.service: No such file or directory"


def test_systemctl_states_and_down():
    module = _Module()
    states = _unit_state.systemctl_states(module, ["nginx", "nvidia-persistenced", "gone"])
    assert states == {"nginx": {"active": "active", "enabled": "enabled"},
                      "nvidia-persistenced": {"active": "inactive", "enabled": "enabled"},
                      "gone": {"active": "inactive", "enabled": ""}}
    assert len(module.calls) == 6  # one run per unit and verb
    assert _unit_state.down(states) == ["nvidia-persistenced", "gone"]
    assert _unit_state.systemctl_states(module, []) == {} and _unit_state.down({}) == []


def test_systemctl_states_without_systemctl():
    assert _unit_state.systemctl_states(_Module(None), ["nginx"]) == {"nginx": {"active": "", "enabled": ""}}
    assert _unit_state.down({"nginx": {"active": "", "enabled": ""}}) == ["nginx"]
    with pytest.raises(SystemExit, match="systemctl"):
        _unit_state.systemctl_states(_Module(None), ["nginx"], required=True)


def test_install_now_is_what_the_start_record_stores():
    assert _unit_state.install_now("vllm-0.21.0-torch2.11.0-cu126", "abc") == NEW
    assert _unit_state.install_now("", "") == "@"


def test_stale_entry():
    assert _unit_state.stale_entry(CMD_R, True, NEW, NEW) is None
    assert _unit_state.stale_entry(CMD_R, False, "@", "") is None
    assert _unit_state.stale_entry(CMD_R, True, NEW, "vllm-0.19.1-torch2.10.0-cu128@def") == {
        "name": "command-r", "engine": "vllm", "started": "vllm-0.19.1-torch2.10.0-cu128@def", "now": NEW,
        "previous": "vllm-0.19.1-torch2.10.0-cu128", "install": "vllm-0.21.0-torch2.11.0-cu126"}
    # No start record yet: restarted once, from "unknown", with no previous install to go back to.
    none = _unit_state.stale_entry(CMD_R, True, NEW, "")
    assert (none["started"], none["previous"]) == ("unknown", "")
    # The same install with another record (a repaired venv) is stale too.
    assert _unit_state.stale_entry(CMD_R, True, NEW, "vllm-0.21.0-torch2.11.0-cu126@xyz")["previous"] == NEW[:-4]


def test_marked_units():
    mark = "# volta.serving engine_service instance "
    contents = {"volta-a.service": f"# x\n{mark}a: rendered\n", "volta-b.service": "[Unit]\n",
                "volta-c.service": f"  {mark}c\n"}
    assert _unit_state.marked_units(contents, mark) == ["volta-a.service"]


GROUPS = {"video": (44, []), "render": (993, ["volta"]), "volta": (990, [])}
USER = {"name": "volta", "group": "volta", "groups": ["video", "render"], "home": "/var/lib/volta",
        "shell": "/usr/sbin/nologin", "comment": "volta.serving engines"}
FOUND = {"gid": 990, "home": "/var/lib/volta", "shell": "/usr/sbin/nologin", "gecos": "volta.serving engines"}


def test_account_changes():
    groups = dict(GROUPS, video=(44, ["volta"]))
    assert _unit_state.account_changes(["video", "render"], USER, groups.get, {"volta": FOUND}.get) == []
    assert _unit_state.account_changes(["video", "render"], USER, GROUPS.get, {"volta": FOUND}.get) == [
        "user volta is not in group video"]
    assert _unit_state.account_changes(["video", "render"], USER, {"video": (44, [])}.get, {}.get) == [
        "group render is missing", "group volta is missing", "user volta is missing"]
    drifted = {**FOUND, "shell": "/bin/bash", "gid": 44}
    assert _unit_state.account_changes([], USER, groups.get, {"volta": drifted}.get) == [
        "user volta's primary group is not volta", "user volta's shell is '/bin/bash', not '/usr/sbin/nologin'"]
