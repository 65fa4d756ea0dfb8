"""The vLLM release the engine role pins asks for the torch the role installs (real wheel METADATA)."""

import re
from pathlib import Path

import yaml
from artifacts import fetch, member

ROOT = Path(__file__).resolve().parents[2]


def _defaults():
    return yaml.safe_load((ROOT / "roles" / "engine" / "defaults" / "main.yml").read_text(encoding="utf-8"))


def _torch_pin(wheel):
    meta = member(wheel, ".dist-info/METADATA").decode("utf-8", "replace")
    pins = re.findall(r"^Requires-Dist: torch\s*==\s*([0-9][0-9.]*)\s*$", meta, re.M)
    assert len(pins) == 1, f"{wheel.name}: torch pins {pins}"
    return pins[0]


def test_default_vllm_pin_matches_its_torch_requirement():
    defaults = _defaults()
    wheel = fetch("vllm", defaults["engine_vllm_version"])
    assert _torch_pin(wheel) == defaults["engine_vllm_torch_version"], wheel.name
