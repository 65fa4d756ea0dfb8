# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter api_keys_changed (internal role volta.serving._api_keys)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load (see plugins/filter/engine_build.py).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _api_keys

    return _api_keys


def api_keys_changed(instances, changed_paths):
    """The instances whose environment file or key file is among changed_paths, in plan order."""
    if not isinstance(instances, (list, tuple)):
        raise AnsibleFilterError(f"api_keys_changed: expected the plan's instances, got {type(instances).__name__}")
    return _logic().changed(list(instances), list(changed_paths or []))


class FilterModule:
    def filters(self):
        return {"api_keys_changed": api_keys_changed}
