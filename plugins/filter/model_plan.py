# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters model_plan, model_paths, model_preflight_reads, model_check_entries, model_token_files and
model_switch_back: the model layer's plan, served paths, checks and token files."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.module_utils import _model

    return _model


def model_plan(instances, models, root, names=None, allow_branch=False, endpoint=None, lab=False):
    """The models to fetch for these instances (or *names*), each with its directory and served path."""
    logic = _logic()
    try:
        return logic.model_plan(instances, models, root, names, allow_branch, endpoint, lab)
    except logic.ModelError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def model_paths(instances, models, root, allow_branch=False):
    """The instances with ``model`` set from ``model_source`` (removed), as the serving plan reads them."""
    logic = _logic()
    try:
        return logic.resolve_instances(instances, models, root, allow_branch)
    except logic.ModelError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def model_preflight_reads(instances, models, root=None, endpoint=None):
    """What preflight reads about the instances' models: {paths, hub} (see _model_hub.preflight_reads)."""
    from ansible_collections.volta.serving.plugins.module_utils import _model_hub

    return _model_hub.preflight_reads(instances, models, root, endpoint)


def model_check_entries(plan, root):
    """What volta.serving.model_fetch needs of each planned model (see _model.check_entries)."""
    return _logic().check_entries(plan, root)


def model_token_files(plan, models, root):
    """The token files of the planned models as entries of volta.serving.files (see _model.token_files)."""
    return _logic().token_files(plan, models, root)


def model_switch_back(instances, name, model):
    """The plan's instances with instance *name* on *model* (see _model.on_model)."""
    return _logic().on_model(instances, name, model)


class FilterModule:
    def filters(self):
        return {"model_plan": model_plan, "model_paths": model_paths, "model_preflight_reads": model_preflight_reads,
                "model_switch_back": model_switch_back, "model_token_files": model_token_files,
                "model_check_entries": model_check_entries}
