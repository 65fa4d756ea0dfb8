# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the file_entries and unit_files filters."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter.file_entries import file_entries, unit_files

A = {"name": "a", "unit": "volta-a.service"}
B = {"name": "b", "unit": "volta-b.service"}


def test_file_entries():
    assert file_entries(["/x", "/y"], mode="0750", owner="volta") == [
        {"path": "/x", "mode": "0750", "owner": "volta"}, {"path": "/y", "mode": "0750", "owner": "volta"}]
    with pytest.raises(AnsibleFilterError, match="unknown attribute"):
        file_entries(["/x"], colour="red")
    with pytest.raises(AnsibleFilterError, match="expected a list of paths, got str"):
        file_entries("/x")


def test_unit_files_verify_all_but_the_unverified():
    got = unit_files([A, B], "engine.service.j2", "inst", verifier="/v", unverified=["b"])
    assert got == [
        {"path": "/etc/systemd/system/volta-a.service", "template": "engine.service.j2", "template_vars": {"inst": A},
         "validate": "/v %s volta-a.service"},
        {"path": "/etc/systemd/system/volta-b.service", "template": "engine.service.j2", "template_vars": {"inst": B}},
    ]
    assert "validate" not in unit_files([A], "t", "inst")[0]
