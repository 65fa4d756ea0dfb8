# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for _engine_settings: the engine role's settings refusals and their messages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import engine_settings_problems as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _engine_settings as es

KNOWN = ["vllm", "onecat", "llamacpp"]
SHA = "ab" * 32
GOOD = {
    "engine_keep": 2,
    "engine_onecat_sha256": SHA,
    "engine_onecat_wheel_url": "https://example.test/whl/vllm-0.11.1+onecat-cp312-linux_x86_64.whl",
    "engine_llamacpp_ref": "b6000",
    "engine_llamacpp_source_sha256": SHA,
    "engine_llamacpp_source_url": "https://example.test/llama.cpp/archive/b6000.tar.gz",
    "engine_vllm_source_url": "",
    "engine_vllm_source_sha256": "",
}


def problems(flavours=("vllm", "onecat", "llamacpp"), **changes):
    return es.settings_problems({**GOOD, **changes}, "gpu1", list(flavours), KNOWN)


def test_good_settings_pass():
    assert problems() == []


def test_unknown_flavours_are_listed_with_the_known_ones():
    assert problems(flavours=["vllm", "sglang", "tgi"]) == [
        "unknown engine flavour(s) sglang, tgi; known: vllm, onecat, llamacpp"]


@pytest.mark.parametrize(("keep", "refused"), [(1, False), ("3", False), (0, True), ("none", True), (None, True)])
def test_engine_keep_keeps_one_install_to_roll_back_to(keep, refused):
    found = problems(engine_keep=keep)
    assert found == ([f"engine_keep must be at least 1 (the install to roll back to), got {keep}"] if refused else [])


@pytest.mark.parametrize(("sha", "shown"), [("", "not set"), ("abc", '"abc"'), (SHA + "0", f'"{SHA}0"')])
def test_a_onecat_host_needs_the_wheels_sha256(sha, shown):
    (msg,) = problems(engine_onecat_sha256=sha)
    assert msg == (
        f"gpu1: engine_onecat_sha256 is {shown}. Why: an instance runs on 1Cat-vLLM, and its wheel "
        "(vllm-0.11.1+onecat-cp312-linux_x86_64.whl) is only installed when it matches a pinned sha256 (there is "
        "no default). Fix: set engine_onecat_sha256 to the 64-hex-digit sha256 of the wheel you reviewed "
        "(sha256sum vllm-0.11.1+onecat-cp312-linux_x86_64.whl).")


def test_the_onecat_pin_is_not_asked_of_a_host_without_onecat():
    assert problems(flavours=["vllm"], engine_onecat_sha256="") == []


def test_llamacpp_without_a_ref_does_not_name_the_url():
    (msg,) = problems(engine_llamacpp_ref="", engine_llamacpp_source_sha256="")
    assert msg.startswith("gpu1: engine_llamacpp_ref is not set and engine_llamacpp_source_sha256 is not set. Why: ")
    assert msg.endswith("(the sha256 of the archive engine_llamacpp_source_url names for that tag).")


def test_llamacpp_with_a_ref_names_the_archive_to_hash():
    (msg,) = problems(engine_llamacpp_source_sha256="deadbeef")
    assert msg.startswith("gpu1: engine_llamacpp_ref is b6000 and engine_llamacpp_source_sha256 is deadbeef.")
    assert msg.endswith("names for that tag, https://example.test/llama.cpp/archive/b6000.tar.gz).")


def test_a_vllm_source_archive_needs_its_sha256():
    url = "https://example.test/vllm-0.21.0.tar.gz"
    assert problems(engine_vllm_source_url=url, engine_vllm_source_sha256=SHA) == []
    (msg,) = problems(engine_vllm_source_url=url)
    assert msg.startswith(f"gpu1: engine_vllm_source_url is {url} but engine_vllm_source_sha256 is not set. Why: ")
    assert problems(flavours=["llamacpp"], engine_vllm_source_url=url) == []


def test_checks_run_in_the_role_order():
    found = problems(flavours=["vllm", "onecat", "x"], engine_keep=0, engine_onecat_sha256="")
    assert [m.split(" ", 2)[:2] for m in found] == [["unknown", "engine"], ["engine_keep", "must"],
                                                    ["gpu1:", "engine_onecat_sha256"]]


def test_filter_through_jinja():
    assert plugin.FilterModule().filters() == {"engine_settings_problems": plugin.engine_settings_problems}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "engine_settings_problems"
    templar = Templar(loader=None, variables={"s": {**GOOD, "engine_keep": 0}, "f": ["vllm"], "k": KNOWN})
    templar.environment.filters["engine_settings_problems"] = plugin.engine_settings_problems
    found = templar.template(trust_as_template("{{ s | engine_settings_problems(host='a', flavours=f, known=k) }}"))
    assert found == ["engine_keep must be at least 1 (the install to roll back to), got 0"]


def test_the_role_passes_every_setting_the_checks_read():
    tasks = yaml.safe_load((Path(__file__).parents[4] / "roles/engine/tasks/preflight.yml").read_text())
    (task,) = [t for t in tasks if "__engine_t_settings" in t.get("vars", {})]
    assert "__engine_t_given | volta.serving.engine_settings_problems(" in task["vars"]["__engine_t_settings"]
    # engine_keep always; each flavour's pins (task var __engine_t_pins) only when the host needs the flavour.
    passed = {name: value for pins in task["vars"]["__engine_t_pins"].values() for name, value in pins.items()}
    for name in GOOD:
        assert (f"'{name}': {name}" in task["vars"]["__engine_t_given"]
                or passed.get(name) == "{{ " + name + " }}"), name
