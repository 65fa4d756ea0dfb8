# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin volta.serving.settings: the host's name and every registry variable it sets, checked.

Documented in plugins/modules/settings.py. Controller only, never connects to the host. The variables a host
sets are its own (inventory, group and extra variables: HostVars.raw_get, without any play's role defaults,
which are trusted); each registry variable among them is templated here and checked by
plugin_utils/_settings.check_host (its type against its role's argument spec, then the registry's checker).
"""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import (
    UNKNOWN_MODES,
    mode_finding,
    soften,
    unknown_variables,
)
from ansible_collections.volta.serving.plugins.plugin_utils._settings import all_defaults, check_host, registry
from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import show
from ansible_collections.volta.serving.plugins.plugin_utils._vault import message as vault_message
from ansible_collections.volta.serving.plugins.plugin_utils._vault import unreadable_paths

ARGUMENT_SPEC = {"unknown_variables": {"type": "bool", "default": False}}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        host = task_vars["inventory_hostname"]
        hostvars = task_vars.get("hostvars") or {}
        own = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else task_vars
        table = registry()
        # A host's template may name a role's default (engine_onecat_version in a wheel URL): they are there to
        # read, below the host's own variables, also in a play that imports no role.
        templar = self._templar.copy_with_new_env(available_variables={**all_defaults(), **task_vars})
        values, problems, warnings, vaulted = {}, [], [], []
        for name in sorted(n for n in own if n in table):
            try:
                values[name] = templar.template(own[name])
            except AnsibleError as exc:
                if "vault" in str(exc).lower() or "decrypt" in str(exc).lower():
                    vaulted.extend(unreadable_paths(name, own[name], self._undecryptable))
                    continue
                warnings.append(self._unrendered(host, name, exc, any(row[3] for row in table[name])))
        problems = check_host(host, values) + ([vault_message(host, sorted(vaulted))] if vaulted else [])
        if args["unknown_variables"]:
            problems_unknown, warnings_unknown = self._unknown(host, own)
            problems.extend(problems_unknown)
            warnings.extend(warnings_unknown)
        result.update(changed=False, problems=problems, checked=sorted(values))
        if warnings:
            result["warnings"] = warnings
        if problems:
            result.update(failed=True, msg=" ".join(problems))
        else:
            result["msg"] = f"{host}: {len(values)} setting(s) checked, no problem"
        return result

    def _undecryptable(self, value):
        """True for a Vault-encrypted value that cannot be decrypted (no or a wrong password)."""
        if type(value).__name__ != "EncryptedString":
            return False
        try:
            self._templar.template(value)
        except AnsibleError:
            return True
        return False

    @staticmethod
    def _unrendered(host, name, exc, secret):
        """The warning of a variable that cannot be templated here (left to the role that reads it).

        A lookup of a file that only exists where the role reads it, a variable of a layer this host does not
        run: a role reads some settings only when the host needs them, and renders them then.
        """
        text = str(exc)
        detail = "" if secret else f" ({show(text.splitlines()[0] if text else type(exc).__name__)})"
        return (f"{host}: {name}: not checked here, its template cannot be rendered on the controller before "
                f"the run{detail}; the role that reads it renders it when the host needs it")

    def _unknown(self, host, own):
        """The unknown variables of a host preflight does not check (a router or monitoring host only)."""
        mode = own.get("preflight_unknown_variables", own.get("volta_unknown_variables", "error"))
        try:
            mode = self._templar.template(mode)
        except AnsibleError:
            mode = "error"
        findings = unknown_variables(host, list(own))
        refused = mode_finding(host, mode)
        findings = soften(findings, mode if mode in UNKNOWN_MODES else "error") + ([refused] if refused else [])
        errors = [f["message"] for f in findings if f["severity"] == "error"]
        return errors, [f["message"] for f in findings if f["severity"] != "error"]
