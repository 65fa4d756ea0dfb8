# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Published example keys refused outside a lab (plugins/plugin_utils/_example_keys.py).

The recorded digests must be those of the keys the example inventories hold: the lab's Vault
(decrypted here with its published example password) and the sim inventory's clear test keys.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from ansible.constants import DEFAULT_VAULT_ID_MATCH
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible_collections.volta.serving.plugins.plugin_utils._example_keys import EXAMPLE_KEY_SHA256, check_example_keys
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

REPO = Path(__file__).resolve().parents[4]
LAB_VAULT = REPO / "inventories" / "lab" / "group_vars" / "all" / "vault.yml"
SIM_KEYS = REPO / "inventories" / "sim" / "group_vars" / "volta" / "api_keys_TEST_ONLY.yml"
LAB_PASSWORD = b"volta-lab-example"  # published in inventories/lab/group_vars/all/README.md
SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip


def _sha(key):
    return hashlib.sha256(key.encode()).hexdigest()


def shipped_keys():
    vault = VaultLib([(DEFAULT_VAULT_ID_MATCH, VaultSecret(LAB_PASSWORD))])

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!vault", lambda loader, node: vault.decrypt(loader.construct_scalar(node)).decode())
    lab = yaml.load(LAB_VAULT.read_text(encoding="utf-8"), Loader=Loader)["api_gateway_keys"]  # noqa: S506
    sim = yaml.safe_load(SIM_KEYS.read_text(encoding="utf-8"))["api_gateway_keys"]
    out = {f"inventories/lab ({name})": key for name, key in lab.items()}
    out.update({f"inventories/sim ({name})": key for name, key in sim.items()})
    return out


def test_recorded_digests_are_the_shipped_keys():
    assert {_sha(key): where for where, key in shipped_keys().items()} == EXAMPLE_KEY_SHA256


def test_example_key_is_refused_outside_a_lab():
    digest = _sha(shipped_keys()["inventories/lab (command-r)"])
    rep = build_report(PlanInputs("prod-1", SERVER, [], key_sha256={"api_gateway_keys[command-r]": digest}))
    assert [(f["rule"], f["severity"], f["field"]) for f in rep["findings"]] == [
        ("example-key", "error", "api_gateway_keys[command-r]")
    ]
    message = rep["findings"][0]["message"]
    assert message.startswith(
        "prod-1: host-wide: field api_gateway_keys[command-r]: api_gateway_keys[command-r] is a published "
        "example key (from inventories/lab (command-r))."
    )
    assert "Fix: set api_gateway_generate_keys: true and remove the key" in message
    assert shipped_keys()["inventories/lab (command-r)"] not in message


@pytest.mark.parametrize("where", ["api_gateway_host_key", "api_gateway_keys[anything]"])
def test_sim_key_as_host_key_is_refused(where):
    digest = _sha("sim-test-key-qwen72b-not-a-secret")
    assert [f["field"] for f in check_example_keys("h", {where: digest}, lab=False)] == [where]


def test_lab_inventory_may_use_its_example_keys():
    digest = _sha(shipped_keys()["inventories/sim (qwen72b)"])
    assert check_example_keys("h", {"api_gateway_host_key": digest}, lab=True) == []


def test_other_keys_pass():
    assert check_example_keys("h", {"api_gateway_keys[m1]": _sha("a-key-of-my-own-0123456789abcdef")}, lab=False) == []
    assert check_example_keys("h", None, lab=False) == []
