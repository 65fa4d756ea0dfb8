# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of volta.serving.firewall's decisions (logic and unit tests: plugins/plugin_utils/_firewall_plan.py):
firewall_ports (the rulesets' port lists from the serving plan), firewall_port_check (the plan phase's
refusals and report), firewall_needs_load, firewall_apply_files and firewall_rollback_outcome (the configure
phase)."""

from __future__ import annotations


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _firewall_plan

    return _firewall_plan


def _plain(value):
    """A mapping as a dict (Ansible's lazy containers included), anything else as it is."""
    return dict(value) if hasattr(value, "keys") else value


def firewall_ports(serving_plan, settings):
    """{gateway, engine, extra, router, metrics, ssh, ray} (see _firewall_plan.ports).

    *settings*: host, volta_hosts (group volta), ssh_port, extra, metrics, exporter (None: the plan's).
    """
    settings = _plain(settings)
    exporter = settings.get("exporter")
    return _logic().ports(_plain(serving_plan), settings["host"], list(settings.get("volta_hosts") or []),
                          settings["ssh_port"], list(settings.get("extra") or []), list(settings.get("metrics") or []),
                          None if exporter is None else list(exporter))


def firewall_port_check(ports, host, backend, ssh_port, nets):
    """{problems, message, report} (see _firewall_plan.port_check)."""
    return _logic().port_check(_plain(ports), str(host), backend, ssh_port,
                               {k: _plain(v) for k, v in _plain(nets).items()})


def firewall_needs_load(state, backend, conf=None):
    """Whether the rules must be loaded (see _firewall_plan.needs_load)."""
    return _logic().needs_load(_plain(state), backend, _plain(conf))


def firewall_apply_files(inputs):
    """The load's files for volta.serving.files (see _firewall_plan.apply_files).

    *inputs*: backend, staged, content, rollback_pending, rollback_script.
    """
    inputs = _plain(inputs)
    return _logic().apply_files(inputs["backend"], inputs["staged"], inputs["content"],
                                bool(inputs["rollback_pending"]), inputs["rollback_script"])


def firewall_rollback_outcome(facts):
    """What a failed load left behind (see _firewall_plan.rollback_outcome)."""
    return _logic().rollback_outcome(_plain(facts))


class FilterModule:
    def filters(self):
        return {
            "firewall_ports": firewall_ports,
            "firewall_port_check": firewall_port_check,
            "firewall_needs_load": firewall_needs_load,
            "firewall_apply_files": firewall_apply_files,
            "firewall_rollback_outcome": firewall_rollback_outcome,
        }
