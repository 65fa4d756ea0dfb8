"""The torch pins of real releases: vLLM's own `torch==X`, read the way engine/tasks/pins.yml reads it
(volta.serving.dist_metadata: PEP 658 metadata, else the sdist's PKG-INFO) from the real index, and
the torch companions recorded in roles/engine/vars/main.yml against the real wheels' METADATA."""

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.module_utils._index import (
    MetadataError,
    exact_pins,
    from_index,
    parse_metadata,
    requirements,
)
from artifacts import fetch, member, unavailable

ROOT = Path(__file__).resolve().parents[2]
# vLLM release -> the torch its metadata pins (shared/reference/v100-serving-facts.md section 3).
VLLM_TORCH = {"0.16.0": "2.9.1", "0.19.1": "2.10.0", "0.21.0": "2.11.0", "0.22.0": "2.11.0", "0.33.0": "2.14.0"}


def _yaml(*parts):
    return yaml.safe_load((ROOT.joinpath(*parts)).read_text(encoding="utf-8"))


def _defaults():
    return _yaml("roles", "engine", "defaults", "main.yml")


def _companions():
    return _yaml("roles", "engine", "vars", "main.yml")["__engine_torch_companions"]


def _torch_pin(wheel):
    meta = member(wheel, ".dist-info/METADATA").decode("utf-8", "replace")
    pins = re.findall(r"^Requires-Dist: torch\s*==\s*([0-9][0-9.]*)\s*$", meta, re.M)
    assert len(pins) == 1, f"{wheel.name}: torch pins {pins}"
    return pins[0]


def _read(name, version):
    """dist_metadata's reader against the role's default index (engine_pypi_index_url)."""
    try:
        return from_index(_defaults()["engine_pypi_index_url"], name, version, 60, "x86_64")
    except MetadataError as exc:
        unavailable(str(exc))


def test_default_vllm_pin_matches_its_torch_requirement():
    defaults = _defaults()
    wheel = fetch("vllm", defaults["engine_vllm_version"])
    assert _torch_pin(wheel) == defaults["engine_vllm_torch_version"], wheel.name


@pytest.mark.parametrize(
    ("version", "torch"), [(v, t) for v, t in VLLM_TORCH.items() if v in ("0.19.1", "0.21.0", "0.33.0")]
)
def test_reader_gets_vllm_torch_pin_from_the_real_index(version, torch):
    meta = _read("vllm", version)
    # pep658 where the index advertises the metadata file (pypi.org); some mirrors serve the file
    # without the attribute (pep658-unadvertised) or not at all (the sdist's PKG-INFO, ~31 MB).
    assert meta["method"] in ("pep658", "pep658-unadvertised", "sdist"), meta["method"]
    assert (meta["name"], meta["version"]) == ("vllm", version)
    assert exact_pins(meta["requires_dist"])["torch"] == torch


@pytest.mark.parametrize("version", ["0.19.1", "0.21.0"])
def test_pep658_metadata_is_the_wheels_metadata(version):
    meta = _read("vllm", version)
    if not meta["method"].startswith("pep658"):
        pytest.skip(f"the index serves no PEP 658 file for vllm {version} ({meta['method']})")
    wheel = parse_metadata(member(fetch("vllm", version), ".dist-info/METADATA").decode("utf-8"))
    assert meta["requires_dist"] == wheel["requires_dist"]


def test_every_torch_vllm_pins_has_recorded_companions():
    companions = _companions()
    for version, torch in VLLM_TORCH.items():
        pin = exact_pins(_read("vllm", version)["requires_dist"])["torch"]
        assert pin == torch, f"vllm {version} pins torch {pin}"
        assert "torchvision" in companions.get(pin, {}), f"torch {pin} (vllm {version}) has no torchvision recorded"


def _torch_requirement(project, version):
    meta = parse_metadata(member(fetch(project, version), ".dist-info/METADATA").decode("utf-8"))
    reqs = [r for r in requirements(meta["requires_dist"]) if r["key"] == "torch"]
    return reqs[0]["specifier"] if reqs else None


# Recorded from the real wheels: torchaudio 2.11.0 declares no torch requirement; torchvision 0.29.1
# says torch>=2.14.0; every other companion pins its torch exactly.
NOT_EXACT = {("torchaudio", "2.11.0"): None, ("torchvision", "0.29.1"): ">=2.14.0"}


@pytest.mark.parametrize(
    ("torch", "project", "version"),
    [(t, p, v) for t, comps in _companions().items() for p, v in sorted(comps.items())],
)
def test_recorded_companion_is_the_build_of_that_torch(torch, project, version):
    spec = _torch_requirement(project, version)
    if (project, version) in NOT_EXACT:
        assert spec == NOT_EXACT[(project, version)]
    else:
        assert spec == f"=={torch}", f"{project} {version} requires torch{spec}, recorded for torch {torch}"
