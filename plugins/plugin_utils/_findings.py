# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A finding of the serving rules: what every rule returns, and the three severities.

Pure Python, no Ansible imports. A rule's severity is its entry in the registry (``_rules.RULES``, assembled
from every layer's CATALOGUE); an instance's ``allow`` entry may later turn an overridable error into
``allowed`` (``_rules.apply_allow``).
"""

from __future__ import annotations

ERROR = "error"
WARNING = "warning"
ALLOWED = "allowed"


def finding(rule, host, instance, field, text, why, fix):
    """One finding. The message names the host, the instance (or host-wide) and the field."""
    # Read on call: the registry imports every layer of rules, and each layer imports this module.
    from ansible_collections.volta.serving.plugins.plugin_utils._rules import RULES

    severity = RULES[rule][0]
    where = f"instance {instance}" if instance else "host-wide"
    message = f"{host}: {where}: field {field}: {text} Why: {why} Fix: {fix}"
    return {
        "rule": rule,
        "severity": severity,
        "host": host,
        "instance": instance,
        "field": field,
        "message": message,
    }
