# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of volta.serving.preflight (logic and unit tests: plugins/plugin_utils/_preflight_inputs.py):
preflight_input_shapes (the shape of the serving plan's first inputs) and preflight_model_reads (what preflight
reads of the instances' models), each from the host's variables, hostvars[inventory_hostname]."""

from __future__ import annotations


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _preflight_inputs

    return _preflight_inputs


def preflight_input_shapes(variables, host):
    """One line per variable of the wrong type (see _preflight_inputs.input_shapes)."""
    return _logic().input_shapes(variables, str(host))


def preflight_model_reads(variables):
    """{paths, hub, pending} (see _preflight_inputs.model_reads)."""
    return _logic().model_reads(variables)


class FilterModule:
    def filters(self):
        return {"preflight_input_shapes": preflight_input_shapes, "preflight_model_reads": preflight_model_reads}
