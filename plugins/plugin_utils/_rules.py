# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The V100 (SM70) serving rules' one registry: every rule id with its severity, and the per-instance checks.

Pure Python, no Ansible imports, controller only. Private to the collection (leading underscore): no
compatibility promise outside volta.serving. ``_plan`` builds the normalised instances and the launch plan;
the rules only judge them. Each layer of rules declares its CATALOGUE (id: (severity, overridable, what it is
about)) next to its checks; RULES below is assembled from them, in one place, and nothing changes it later.

The layers: the inputs' shape (``_inputs``), what only preflight checks (``_preflight_rules``), the host's
GPUs and RAM (``_rules_host``), its GPU health (``_health_rules``), its software (``_rules_software``), the
engine settings of an instance (``_rules_engine``, ``_rules_scheduler``), its model family
(``_rules_model``) and checkpoint (``_model_rules``), the serving ports and replicas (``_rules_serving``),
security (``_rules_security``), multi-host instances (``_cluster``) and the allow entries (here).

Sources: ``shared/reference/v100-serving-facts.md`` sections 1, 3 and 4 and the two seed
write-ups. Rules marked *unverified* there are ``overridable``: an instance may list them in
``allow`` with a reason, and the finding is then reported as ``allowed`` with that reason.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils import (
    _cluster,
    _health_rules,
    _inputs,
    _model_rules,
    _preflight_rules,
    _rules_engine,
    _rules_host,
    _rules_model,
    _rules_scheduler,
    _rules_security,
    _rules_serving,
    _rules_software,
)
from ansible_collections.volta.serving.plugins.plugin_utils._findings import ALLOWED, ERROR, WARNING, finding

# The allow entries' own rules.
ALLOW_CATALOGUE = {
    "allow-invalid": (ERROR, False, "an allow entry without rule and reason, or with an unknown rule"),
    "allow-not-overridable": (ERROR, False, "an allow entry for a rule that cannot be overridden"),
    "allow-unused": (WARNING, False, "an allow entry that matches no finding"),
}

# Every rule: id -> (severity, overridable, what it is about). The one registry of rule ids.
RULES = {
    **_inputs.CATALOGUE,
    **_preflight_rules.CATALOGUE,
    **_rules_host.CATALOGUE,
    **_health_rules.CATALOGUE,
    **_rules_software.CATALOGUE,
    **_rules_engine.CATALOGUE,
    **_rules_scheduler.CATALOGUE,
    **_rules_model.CATALOGUE,
    **_model_rules.MODEL_RULES,
    **_rules_serving.CATALOGUE,
    **_rules_security.CATALOGUE,
    **_cluster.CATALOGUE,
    **ALLOW_CATALOGUE,
}
OVERRIDABLE = tuple(rule for rule, (_sev, over, _what) in RULES.items() if over)

# The checks of one normalised instance, in the order their findings are reported.
INSTANCE_CHECKS = (
    _rules_engine.check_parallel,
    _rules_engine.check_dtype,
    _rules_engine.check_attention,
    _rules_engine.check_quantization,
    _rules_model.check_model_family,
    _rules_engine.check_memory,
    _rules_scheduler.check_scheduler,
    _rules_security.check_security,
)


def check_instance(inst, ctx):
    """Every per-instance rule's findings for one normalised instance (see INSTANCE_CHECKS)."""
    findings = []
    for check in INSTANCE_CHECKS:
        findings.extend(check(inst, ctx))
    return findings


def apply_allow(findings, instances, host):
    """Downgrade findings allowed on purpose; report bad and unused allow entries."""
    out = list(findings)
    extra = []
    for inst in instances:
        for index, entry in enumerate(inst.get("allow") or []):
            problem = _allow_problem(host, inst["name"], f"allow[{index}]", entry)
            if problem:
                extra.append(problem)
            elif not _allow(out, inst["name"], entry["rule"], entry["reason"].strip()):
                extra.append(
                    finding(
                        "allow-unused",
                        host,
                        inst["name"],
                        f"allow[{index}]",
                        f"allow entry for {entry['rule']} matches no finding.",
                        "a stale override hides the rule the day the configuration changes back.",
                        "remove the entry.",
                    )
                )
    return out + extra


def _allow_problem(host, name, field, entry):
    """The finding of an allow entry that cannot apply (not a known rule with a reason, or not overridable)."""
    rule = entry.get("rule") if isinstance(entry, dict) else None
    reason = entry.get("reason") if isinstance(entry, dict) else None
    if not isinstance(rule, str) or rule not in RULES or not isinstance(reason, str) or not reason.strip():
        return finding(
            "allow-invalid",
            host,
            name,
            field,
            f"allow entry {entry!r} needs a known rule id and a non-empty reason.",
            "an override is only accepted with the reason it is safe, which the output logs.",
            f"write {{rule: ID, reason: \"...\"}}; overridable rules: {', '.join(OVERRIDABLE)}.",
        )
    if rule not in OVERRIDABLE:
        return finding(
            "allow-not-overridable",
            host,
            name,
            field,
            f"rule {rule} cannot be allowed.",
            "only rules that rest on unverified reports may be overridden; the others are known "
            "failures on V100.",
            f"fix what the rule reports; overridable rules: {', '.join(OVERRIDABLE)}.",
        )
    return None


def _allow(findings, name, rule, reason):
    """Mark *name*'s findings of *rule* allowed with *reason*; whether any matched."""
    matched = False
    for item in findings:
        if item["rule"] == rule and item["instance"] == name and item["severity"] != ALLOWED:
            item["severity"] = ALLOWED
            item["reason"] = reason
            item["message"] += f" Allowed on purpose: {reason}"
            matched = True
    return matched
