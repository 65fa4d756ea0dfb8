# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine role's filters over the engine_installs read: what they refuse, and that they answer."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter.engine_installs import engine_audit_current, engine_unsettled

SPECS = {"vllm": {"name": "vllm-0.21.0-torch2.11.0-cu126", "kind": "python", "version": "0.21.0"}}


def test_unsettled_needs_the_read_and_a_spec_per_flavour():
    with pytest.raises(AnsibleFilterError, match=r"expected the result of volta\.serving\.engine_installs"):
        engine_unsettled({"skipped": True}, ["vllm"], SPECS, {})
    with pytest.raises(AnsibleFilterError, match="no spec with name, kind and version for llamacpp"):
        engine_unsettled({"engines": {}}, ["vllm", "llamacpp"], SPECS, {})


def test_unsettled_on_a_host_without_installs_names_every_flavour():
    assert engine_unsettled({"engines": {}}, ["vllm"], SPECS, {}, None, None) == ["vllm"]


def test_audit_current_needs_an_audit_entry():
    with pytest.raises(AnsibleFilterError, match="expected an entry of engine_installs' audits"):
        engine_audit_current(None, {})
    assert engine_audit_current({}, {}) is False
