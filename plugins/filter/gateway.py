# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters gateway_rotation_files and gateway_probe_base (role volta.serving.api_gateway)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def gateway_rotation_files(listeners):
    """The rotation file of every replica of every service listener, in rotation (module_utils/_services.py)."""
    if not isinstance(listeners, (list, tuple)):
        raise AnsibleFilterError(f"gateway_rotation_files: expected the plan's listeners, got {listeners!r}")
    # Imported on call, not at load (see plugins/filter/engine_build.py).
    from ansible_collections.volta.serving.plugins.module_utils._services import rotation_files

    return [{**entry, "owner": "root", "group": "www-data", "mode": "0640"} for entry in rotation_files(listeners)]


def gateway_probe_base(listen_address, scheme="http"):
    """scheme://host that reaches the gateway on the host itself, where it listens (plugin_utils/_gateway.py)."""
    from ansible_collections.volta.serving.plugins.plugin_utils._gateway import probe_base

    return probe_base(listen_address, scheme)


class FilterModule:
    def filters(self):
        return {"gateway_rotation_files": gateway_rotation_files, "gateway_probe_base": gateway_probe_base}
