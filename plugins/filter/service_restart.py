# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters restart_reasons, restart_record, restart_rollback, restart_failure, model_switch_note
(role volta.serving.engine_service)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load (see plugins/filter/engine_build.py).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _service_restart

    return _service_restart


def _mapping(value, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError(f"{what}: expected a mapping, got {type(value).__name__}")
    return value


def restart_reasons(name, changed_units, changed_keys, inactive, stale_engine):
    """Why an instance (re)starts, as one line."""
    return _logic().reasons(str(name), list(changed_units or []), list(changed_keys or []), list(inactive or []),
                            list(stale_engine or []))


def restart_record(result, instance, outcome):
    """engine_service_restart_result after one instance's restart."""
    return _logic().record(_mapping(result, "restart_record"), _mapping(instance, "restart_record"),
                           _mapping(outcome, "restart_record"))


def restart_rollback(result, stale_engine):
    """The engine to roll back after a failed restart (with the reason), or {}."""
    return _logic().rollback(list(stale_engine or []), _mapping(result, "restart_rollback"))


def restart_failure(result):
    """The failure of a restart sequence with its journal lines."""
    return _logic().failure(_mapping(result, "restart_failure"))


def model_switch_note(served, failed_on, stat):
    """[ok, why not] of a switch back to the model a failed instance last answered on."""
    return list(_logic().switch_back(str(served or ""), str(failed_on or ""), stat or {}))


class FilterModule:
    def filters(self):
        return {
            "restart_reasons": restart_reasons,
            "restart_record": restart_record,
            "restart_rollback": restart_rollback,
            "restart_failure": restart_failure,
            "model_switch_note": model_switch_note,
        }
