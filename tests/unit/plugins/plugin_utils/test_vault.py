# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_vault: where a host's Vault values cannot be decrypted, and the one message (never a value)."""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils import _vault


class Locked:
    """Stands for Ansible's marker of an undecryptable value."""


def locked(value):
    return isinstance(value, Locked)


def test_every_place_of_an_undecryptable_value_is_named():
    variables = {"api_gateway_keys": {"chat": Locked(), "code": "plain"}, "api_gateway_host_key": Locked(),
                 "volta_models": {"m": {"hf": {"token": Locked()}}, "n": [Locked()]}, "other_secret": Locked()}
    assert _vault.unreadable(variables, locked) == [
        "api_gateway_host_key", "api_gateway_keys[chat]", "volta_models[m][hf][token]", "volta_models[n][0]"]


def test_the_message_names_host_why_and_fix_and_is_empty_when_all_can_be_read():
    message = _vault.message("server-a", ["api_gateway_keys[chat]"])
    assert message.startswith("server-a: the inventory holds Ansible Vault-encrypted values that cannot be "
                              "decrypted (api_gateway_keys[chat]). Why: ")
    assert "Fix: rerun with --vault-password-file FILE or --ask-vault-pass" in message
    assert _vault.message("server-a", []) == ""
    assert "and 2 more" in _vault.message("h", [f"k[{i}]" for i in range(7)])
