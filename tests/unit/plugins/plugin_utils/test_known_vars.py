# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_known_vars: the roles' argument specs are the one list of variables; typos get the closest name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils import _known_vars
from ansible_collections.volta.serving.plugins.plugin_utils._normalize import KNOWN_FIELDS

REPO = Path(__file__).resolve().parents[4]


def test_the_known_variables_are_every_option_of_every_argument_spec():
    known = _known_vars.known_variables()
    for name in ("firewall_api_cidrs", "engine_vllm_version", "nvidia_driver_version", "volta_server",
                 "volta_lab", "volta_unknown_variables", "preflight_unknown_variables", "model_hf_endpoint"):
        assert name in known, name
    assert "firewall_api_cidr" not in known


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("firewall_api_cidr", "firewall_api_cidrs"), ("engine_vllm_verison", "engine_vllm_version"),
     ("nvidia_driver_versoin", "nvidia_driver_version"), ("api_gateway_key", "api_gateway_keys"),
     # The exporters', Prometheus's and the router's variables (issue 52: these passed silently).
     ("exporters_listen_adress", "exporters_listen_address"), ("prometheus_retention_tme", "prometheus_retention_time"),
     ("router_port", "router_ports")],
)
def test_an_unknown_variable_is_an_error_with_the_closest_known_name(name, suggested):
    [hit] = _known_vars.unknown_variables("h1", [name, "firewall_ssh_cidrs", "__preflight_x", "ansible_port"])
    assert hit["rule"] == "unknown-variable" and hit["severity"] == "error"
    assert hit["message"].startswith(f"h1: host-wide: field {name}: {name} is not a variable of any volta.serving")
    assert f"Fix: did you mean {suggested}? " in hit["message"]


def test_names_without_a_role_prefix_are_not_ours():
    assert _known_vars.unknown_variables("h1", ["lab_models_missing", "my_var", "__engine_x"]) == []


def test_warn_makes_unknown_variables_and_fields_warnings_only():
    findings = [*_known_vars.unknown_variables("h1", ["firewall_api_cidr"]),
                {"rule": "no-api-key", "severity": "error"}]
    softened = _known_vars.soften(findings, "warn")
    assert [f["severity"] for f in softened] == ["warning", "error"]
    assert _known_vars.soften(findings, "error") == findings


def test_the_instance_fields_include_model_source():
    assert "model_source" in KNOWN_FIELDS
    assert _known_vars.suggestion("model_sorce", KNOWN_FIELDS) == "did you mean model_source? "
    assert _known_vars.suggestion("max_model_lenght", KNOWN_FIELDS) == "did you mean max_model_len? "


def _loader():
    class Loader(yaml.SafeLoader):
        pass
    Loader.add_constructor("!vault", lambda loader, node: "vaulted")
    Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
    return Loader


def _inventory_variables(path):
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_loader()) or {}  # noqa: S506 - SafeLoader subclass
    if path.name == "molecule.yml":
        inventory = (data.get("provisioner") or {}).get("inventory") or {}
        return [v for section in ("host_vars", "group_vars") for v in (inventory.get(section) or {}).values()]
    if path.name == "hosts.yml":
        out, groups = [], list(data.values())
        while groups:
            group = groups.pop() or {}
            out += [group.get("vars") or {}] + [h or {} for h in (group.get("hosts") or {}).values()]
            groups += list((group.get("children") or {}).values())
        return out
    return [data]


# preflight_rejects misspells firewall_api_cidrs on purpose (its converge expects the error).
INVENTORY_FILES = sorted(p for p in [*REPO.glob("inventories/**/*.yml"), *REPO.glob("molecule/*/molecule.yml")]
                         if "preflight_rejects" not in p.parts)


@pytest.mark.parametrize("path", INVENTORY_FILES, ids=[str(p.relative_to(REPO)) for p in INVENTORY_FILES])
def test_the_shipped_inventories_have_no_unknown_variables(path):
    names = [name for variables in _inventory_variables(path) if isinstance(variables, dict) for name in variables]
    assert [f["message"] for f in _known_vars.unknown_variables("h", names)] == []


def test_a_renamed_variable_is_refused_with_its_new_name(monkeypatch):
    monkeypatch.setitem(_known_vars.RENAMED, "engine_fixups_old_name", "engine_new_name")
    found = _known_vars.unknown_variables("gpu1", ["engine_fixups_old_name"], known=frozenset())
    assert [f["rule"] for f in found] == ["unknown-variable"]
    assert "engine_fixups_old_name was renamed engine_new_name" in found[0]["message"]
    assert "Rename engine_fixups_old_name to engine_new_name" in found[0]["message"]


def test_every_role_prefix_is_ours():
    """Each public role's variables are checked: a role whose prefix is not in PREFIXES lets its typos pass."""
    roles = sorted(p.name for p in (REPO / "roles").iterdir() if not p.name.startswith("_"))
    for role in roles:
        assert _known_vars.ours(f"{role}_anything"), role
