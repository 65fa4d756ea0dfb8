# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.template import accept_lazy_markers, get_first_marker_arg

DOCUMENTATION = r"""
---
name: vault_unreadable
short_description: The message for a host whose Vault-encrypted variables cannot be decrypted
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Looks at every variable of the host that starts with a role's prefix (C(api_gateway_), C(model_), C(volta_),
    ...) and lists where a Vault-encrypted value cannot be decrypted (no or a wrong Vault password), without
    failing the template and without showing any value.
  - Returns one message (host, where, why, fix), or V("") when every value can be read.
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The host's variables, C(hostvars[inventory_hostname]).
    type: dict
    required: true
  host:
    description: The host's inventory name, for the message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop with one message when Vault values cannot be decrypted
  ansible.builtin.assert:
    that: __message | length == 0
    fail_msg: "{{ __message }}"
  vars:
    __message: "{{ hostvars[inventory_hostname] | volta.serving.vault_unreadable(host=inventory_hostname) }}"
"""

RETURN = r"""
_value:
  description: The message, or V("") when every Vault value can be decrypted.
  type: str
"""


def _undecryptable(value):
    marker = get_first_marker_arg([value], {})
    return marker is not None and type(marker).__name__ == "VaultExceptionMarker"


@accept_lazy_markers
def vault_unreadable(variables, host):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.volta.serving.plugins.plugin_utils import _vault

    return _vault.message(host, _vault.unreadable(variables, _undecryptable))


class FilterModule:
    """volta.serving.vault_unreadable."""

    def filters(self):
        return {"vault_unreadable": vault_unreadable}
