# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart decisions of the role volta.serving.engine_service (filters in plugins/filter/service_restart.py).

Why an instance (re)starts, what one health-gated restart came to, whether a failed instance rolls its engine
back, and what a failed switch to a new model revision says. Controller only.
"""

from __future__ import annotations


def _stale(stale_engine, name):
    """The stale_engine entry (volta.serving.unit_state) of instance *name*, or {}."""
    return next((entry for entry in stale_engine or [] if entry.get("name") == name), {})


def install_switch(entry):
    """Why an instance whose engine install changed under it restarts ('' when it did not)."""
    if not entry:
        return ""
    if not entry.get("previous"):
        return f"no record of the engine install it runs, now {entry['install']}"
    if entry["previous"] == entry["install"]:
        return f"its engine install {entry['install']} was repaired"
    return f"its engine install changed from {entry['previous']} to {entry['install']}"


def reasons(name, changed_units, changed_keys, inactive, stale_engine):
    """Why instance *name* (re)starts, as one line."""
    out = (["its unit changed"] if name in (changed_units or []) else []) \
        + (["its API key changed"] if name in (changed_keys or []) else []) \
        + (["not running"] if name in (inactive or []) else []) \
        + [install_switch(_stale(stale_engine, name))]
    return "; ".join(r for r in out if r)


def _status(result):
    status = (result or {}).get("status", -1)
    return -1 if status is None else status


def healthy(instance, health, completion):
    """/health answered 200, and a drained replica also answered its completion."""
    return _status(health) == 200 and (not instance.get("drain") or _status(completion) == 200)


def failure_message(instance, outcome):
    """The message of an instance that did not come back (restart_one.yml)."""
    restart = outcome.get("restart") or {}
    health = outcome.get("health") or {}
    unit = instance["unit"]
    if restart.get("failed"):
        why = "did not restart: " + str(restart.get("msg", ""))
    elif _status(health) != 200:
        why = (f"did not answer {outcome['url']} with 200 within {outcome['timeout']} s "
               f"(last: {health.get('msg', 'no answer')})")
    else:
        status = (outcome.get("completion") or {}).get("status", "none")
        why = (f"answered /health but not a completion (POST /v1/completions: status {status}), so it did not "
               "rejoin its service")
    return (f"{outcome['host']}: {unit} {why}. Fix: read the journal lines below (journalctl -u {unit}), then "
            "rerun; engine_service_health_timeout bounds the wait.")


def record(result, instance, outcome):
    """engine_service_restart_result after one instance's restart: restarted, or the failure that stops the
    sequence. *outcome*: host, url, timeout, and the registered restart, health, completion and journal."""
    if healthy(instance, outcome.get("health"), outcome.get("completion")):
        return {**result, "restarted": [*result["restarted"], instance["name"]]}
    return {**result, "failed": True, "instance": instance["name"], "unit": instance["unit"],
            "msg": failure_message(instance, outcome), "journal": list(outcome.get("journal") or [])}


def rollback(stale_engine, result):
    """The engine to roll back after a failed restart: the stale_engine entry of the failed instance when it
    failed on another engine install than the one it ran (with the reason), else {}."""
    entry = _stale([e for e in stale_engine or [] if e.get("previous")], result.get("instance"))
    if not result.get("failed") or not entry:
        return {}
    reason = (f"failed at step 'health check after restart on the new engine install': instance {entry['name']} "
              f"did not come back on {entry['install']}. {result['msg']} Last journal lines: "
              + " | ".join(list(result.get("journal") or [])[-8:]))
    return {**entry, "reason": reason}


def failure(result):
    """The failure of a restart sequence with its journal lines (the host fails with it)."""
    return f"{result['msg']}\nLast journal lines:\n" + "\n".join(result.get("journal") or [])


def switch_back(served, failed_on, stat):
    """Whether a failed instance can go back to the model it last answered on, and why not: (ok, note).

    *served*: the model recorded as having answered (<state dir>/<name>.model, '' when none), *failed_on*: the
    model it failed on, *stat*: the stat result of *served* on disk."""
    if not served:
        return False, "no model is recorded as having answered on this instance"
    if served == failed_on:
        return False, f"it already ran {served} when it last answered (the model did not change)"
    if not (stat or {}).get("exists"):
        return False, (f"the model it answered on, {served}, is no longer on disk (model_keep 0 "
                       "removes older revisions; keep at least 1 to be able to go back)")
    return True, ""


def to_restart(changes):
    """The instances service.yml (re)starts, each once, in this order: unit changed, key changed, not running,
    engine install changed, Ray members restarted. *changes*: units, keys, inactive (names), stale (stale_engine
    entries), ray_members (names)."""
    out = []
    for name in (list(changes.get("units") or []) + list(changes.get("keys") or [])
                 + list(changes.get("inactive") or []) + [e["name"] for e in changes.get("stale") or []]
                 + list(changes.get("ray_members") or [])):
        if name not in out:
            out.append(name)
    return out


def change_reasons(name, changes):
    """Why instance *name* (re)starts, from the same *changes* as to_restart."""
    return reasons(name, changes.get("units"), changes.get("keys"), changes.get("inactive"), changes.get("stale"))


def selected(enabled, names, engines):
    """The enabled instances named in *names* ([] = all) of the engines in *engines* ([] = any), in plan order."""
    return [i for i in enabled if (not names or i["name"] in names) and (not engines or i["engine"] in engines)]


def stale_units(marked, enabled, ray=None):
    """The units of this role on the host (*marked*) that no enabled instance (nor this host's Ray node) has."""
    planned = {i["unit"] for i in enabled} | ({ray["unit"]} if ray else set())
    return sorted(set(marked or []) - planned)


def fail_message(failure, rollback_entry, rollback_result):
    """The host's failure: the restart's, or the rollback's reason and what was rolled back."""
    if not rollback_entry:
        return failure
    return (f"{rollback_entry['reason']}; rolled {rollback_result['flavour']} back from "
            f"{rollback_result['from'] or 'nothing'} to {rollback_result['to']}")
