# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of a host's variables hold Vault-encrypted values that cannot be decrypted, and the message.

Pure Python, no Ansible imports: the filter volta.serving.vault_unreadable passes the predicate that
recognises Ansible's marker for an undecryptable value (ansible-core 2.19 hands the filter markers in
place of the values instead of failing the template). Only where each value is set is reported, never
a value.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import ours


def unreadable_paths(name, value, undecryptable):
    """The places (``api_gateway_keys[chat]``) under *value* that *undecryptable* says cannot be read."""
    if undecryptable(value):
        return [name]
    if isinstance(value, Mapping):
        return [path for key in value for path in unreadable_paths(f"{name}[{key}]", value[key], undecryptable)]
    if isinstance(value, (list, tuple)):
        return [path for index, item in enumerate(value)
                for path in unreadable_paths(f"{name}[{index}]", item, undecryptable)]
    return []


def unreadable(variables, undecryptable):
    """Every unreadable place in the variables with a role's prefix, sorted."""
    return sorted(path for name in variables if ours(name)
                  for path in unreadable_paths(name, variables[name], undecryptable))


def message(host, paths):
    """The one message for a host whose Vault values cannot be decrypted ("" when all can)."""
    if not paths:
        return ""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return (f"{host}: the inventory holds Ansible Vault-encrypted values that cannot be decrypted ({shown}). "
            "Why: no Vault password, or a wrong one, was given; every host is checked before any host is "
            "changed. Fix: rerun with --vault-password-file FILE or --ask-vault-pass (the lab inventory's "
            "example password is documented in inventories/lab/group_vars/all/README.md).")
