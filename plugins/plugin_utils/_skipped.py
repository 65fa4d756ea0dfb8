# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which rules of the serving plan did not run for a host, and why: the summary says so.

Pure Python, no Ansible imports. The model rules need each instance's config.json and weights (read on
the host, or from the controller: a path there or the hub), gpu-facts-mismatch needs the GPUs read by
nvidia-smi, the engine releases need the index. A run that could not read them passes those rules
silently; ``skipped`` names them.
"""

from __future__ import annotations

MODEL_RULES = "model rules (model-missing, tp-heads, max-model-len, weights-fit, ...)"


def controller_model_facts(model_facts):
    """The model facts read from the controller that the model rules can use, and why the others cannot.

    A path that is not on the controller is on the host, which this run did not read: not missing. A hub
    model the controller could not read is not an error either (the hosts may reach the hub).
    Returns ``(facts, reasons)``, reasons: path -> why it was not read.
    """
    kept, reasons = {}, {}
    for path, facts in (model_facts or {}).items():
        if not isinstance(facts, dict):
            continue
        if facts.get("hub_error"):
            reasons[path] = f"the hub could not be read from the controller ({facts['hub_error']})"
        elif facts.get("local") and not facts.get("exists") and not facts.get("pending"):
            reasons[path] = "not on the controller, and the host was not read (volta_preflight_detect=false)"
        else:
            kept[path] = facts
    return kept, reasons


def _model_reason(inst, model_facts, reasons):
    model = inst.get("model")
    if not model:
        return None
    if model_facts is None:
        return "no model was read in this run"
    if model in reasons:
        return reasons[model]
    facts = model_facts.get(model)
    if not isinstance(facts, dict):
        return "its model was not read"
    if not facts.get("local"):
        return f"{model} is a hub id without a model_source; only model_source hub models are read"
    if facts.get("pending"):
        return "a url source the model layer downloads later in this run"
    return None


def skipped(instances, model_facts, gpu_facts, reasons=None):
    """``[line, ...]``: each rule, or group of rules, that did not run for the host, and why."""
    by_reason = {}
    for inst in instances:
        why = _model_reason(inst, model_facts, reasons or {}) if inst.get("engine") else None
        if why:
            by_reason.setdefault(why, []).append(str(inst.get("name") or "?"))
    out = [f"{MODEL_RULES} for {'instance' if len(names) == 1 else 'instances'} {', '.join(names)}: {why}"
           for why, names in by_reason.items()]
    if not isinstance(gpu_facts, dict) or gpu_facts.get("status") != "ok":
        status = (gpu_facts or {}).get("status") if isinstance(gpu_facts, dict) else None
        out.append("gpu-facts-mismatch (volta_server against nvidia-smi): "
                   + (f"nvidia-smi gave no GPU list ({status})" if status else "the GPUs were not read in this run"))
    return out
