# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight (roles/preflight) reads of the serving plan's inputs, from the host's variables, on the controller.

Served by the filters of plugins/filter/preflight_inputs.py. Preflight checks the inputs of the plan and of
every layer before any change, but reads no layer's variables itself: it hands the host's variables
(``hostvars[inventory_hostname]``) to these functions, which read the same names the serving plan reads.

- ``input_shapes``: the shape of the variables the plan checks first (the serving_plan action's SHAPE_VARS);
- ``model_reads``: what preflight reads of the instances' models, on the host or from the hub
  (module_utils/_model_hub.preflight_reads), from the models, their root and their hub endpoint as the
  inventory sets them.
"""

from __future__ import annotations

# The inventory names of the model sources, the models' root and their hub (as the inventory sets them;
# unset: the model layer's defaults, module_utils/_model). The models' root may also come from
# volta_models_root, as the model layer's own default reads it.
MODEL_INPUTS = {"models": "volta_models", "root": "model_root", "endpoint": "model_hf_endpoint"}
ROOT_FALLBACK = "volta_models_root"
INSTANCES = "volta_instances"


def _given(variables, name, default):
    """*name*'s value as Jinja's ``default`` reads it: the value when set (null included), else *default*."""
    return variables[name] if name in variables else default


def shape_names():
    """The host variables whose type the serving plan checks before any expression reads inside them."""
    from ansible_collections.volta.serving.plugins.action.serving_plan import SHAPE_VARS

    return tuple(SHAPE_VARS)


def input_shapes(variables, host, names=None):
    """One line per variable of the wrong type (plugin_utils/_shapes.shape_problems); [] when all are right."""
    from ansible_collections.volta.serving.plugins.plugin_utils._shapes import shape_problems

    names = shape_names() if names is None else names
    return shape_problems(host, {name: _given(variables, name, None) for name in names})


def model_inputs(variables):
    """{instances, models, root, endpoint} of the host's variables ("" for a root or endpoint not set)."""
    root = _given(variables, MODEL_INPUTS["root"], _given(variables, ROOT_FALLBACK, ""))
    return {
        "instances": _given(variables, INSTANCES, []),
        "models": _given(variables, MODEL_INPUTS["models"], {}),
        "root": root,
        "endpoint": _given(variables, MODEL_INPUTS["endpoint"], ""),
    }


def model_reads(variables):
    """{paths, hub, pending}: what preflight reads of the instances' models (see _model_hub.preflight_reads)."""
    from ansible_collections.volta.serving.plugins.module_utils import _model_hub

    given = model_inputs(variables)
    return _model_hub.preflight_reads(given["instances"], given["models"], given["root"], given["endpoint"])
