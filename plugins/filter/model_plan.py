# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.model_plan and volta.serving.model_paths: the model layer's plan and served paths."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.module_utils import _model


def model_plan(instances, models, root, names=None, allow_branch=False):
    """The models to fetch for these instances (or *names*), each with its directory and served path."""
    try:
        return _model.model_plan(instances, models, root, names, allow_branch)
    except _model.ModelError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def model_paths(instances, models, root, allow_branch=False):
    """The instances with ``model`` set from ``model_source`` (removed), as the serving plan reads them."""
    try:
        return _model.resolve_instances(instances, models, root, allow_branch)
    except _model.ModelError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"model_plan": model_plan, "model_paths": model_paths}
