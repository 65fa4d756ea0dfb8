# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters restart_reasons, restart_list, restart_selected, restart_record, restart_rollback, restart_failure,
restart_fail_message, model_switch_note and stale_units (role volta.serving.engine_service)."""

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


def restart_reasons(name, changes):
    """Why an instance (re)starts, as one line (changes: units, keys, inactive, stale, ray_members)."""
    return _logic().change_reasons(str(name), _mapping(changes, "restart_reasons"))


def restart_list(changes):
    """The instances to (re)start, each once (changes: units, keys, inactive, stale, ray_members)."""
    return _logic().to_restart(_mapping(changes, "restart_list"))


def restart_selected(enabled, names, engines):
    """The enabled instances named ([] = all) of the engines given ([] = any), in plan order."""
    if not isinstance(enabled, (list, tuple)):
        raise AnsibleFilterError(f"restart_selected: expected the enabled instances, got {type(enabled).__name__}")
    return _logic().selected(list(enabled), list(names or []), list(engines or []))


def stale_units(marked, enabled, ray=None):
    """The units of the role on the host that no enabled instance (nor the host's Ray node) has, sorted."""
    return _logic().stale_units(list(marked or []), list(enabled or []), ray or None)


def restart_fail_message(failure, rollback, rollback_result=None):
    """The host's failure: the restart's, or the rollback's reason and what was rolled back."""
    return _logic().fail_message(str(failure or ""), rollback or {}, rollback_result or {})


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
            "restart_list": restart_list,
            "restart_selected": restart_selected,
            "stale_units": stale_units,
            "restart_fail_message": restart_fail_message,
            "restart_record": restart_record,
            "restart_rollback": restart_rollback,
            "restart_failure": restart_failure,
            "model_switch_note": model_switch_note,
        }
