# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the filters volta.serving.model_plan and volta.serving.model_paths."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter.model_plan import (
    FilterModule,
    model_check_entries,
    model_paths,
    model_plan,
    model_preflight_reads,
    model_switch_back,
    model_token_files,
)

C1 = "0123456789abcdef0123456789abcdef01234567"
MODELS = {"tiny": {"hf": {"repo": "volta-lab/tiny-llama", "revision": C1, "token": "hf_x"}}}


def test_the_filters_are_registered():
    assert FilterModule().filters() == {"model_plan": model_plan, "model_paths": model_paths,
                                        "model_preflight_reads": model_preflight_reads,
                                        "model_switch_back": model_switch_back,
                                        "model_token_files": model_token_files,
                                        "model_check_entries": model_check_entries}


def test_preflight_reads_never_fails_on_a_bad_inventory():
    empty = {"paths": [], "hub": [], "pending": []}
    assert model_preflight_reads([{"name": "a", "model_source": "nope"}], {}) == empty
    assert model_preflight_reads([{"name": "a", "model": "/m"}], None, None, None) == dict(empty, paths=["/m"])


def test_model_plan_and_paths():
    insts = [{"name": "chat", "model_source": "tiny"}]
    assert model_plan(insts, MODELS, "/m")[0]["dir"] == f"/m/tiny@{C1}"
    assert model_paths(insts, MODELS, "/m") == [{"name": "chat", "model": f"/m/tiny@{C1}"}]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: model_plan([{"model_source": "x"}], MODELS, "/m"), "models x are not in volta_models"),
        (lambda: model_paths([{"name": "a", "model_source": "x"}], MODELS, "/m"), "model_source 'x' is not in"),
        (lambda: model_plan([], {"b": {"hf": {"repo": "a/b", "revision": "main"}}}, "/m", ["b"]), "not a commit id"),
    ],
)
def test_errors_become_filter_errors(call, message):
    with pytest.raises(AnsibleFilterError, match=message):
        call()


def test_switch_back_changes_only_the_model_of_one_instance():
    new, old = "/srv/volta/models/tiny@" + "b" * 40, "/srv/volta/models/tiny@" + C1
    chat = {"name": "chat", "model": new, "served_model_name": "chat",
            "argv": ["/opt/volta/engines/vllm/current/bin/vllm", "serve", new, "--served-model-name", "chat"]}
    other = {"name": "other", "model": new, "argv": ["x", new]}
    out = model_switch_back([chat, other], "chat", old)
    assert out[0] == dict(chat, model=old, argv=["/opt/volta/engines/vllm/current/bin/vllm", "serve", old,
                                                 "--served-model-name", "chat"])
    assert out[1] == other and chat["model"] == new, "the other instance and the input are left as they were"
    llama = {"name": "g", "model": "/m@1/a.gguf", "argv": ["llama-server", "-m", "/m@1/a.gguf", "--alias", "g"]}
    back = model_switch_back([llama], "g", "/m@0/a.gguf")[0]["argv"]
    assert back == ["llama-server", "-m", "/m@0/a.gguf", "--alias", "g"]


def test_token_files_write_a_set_token_and_remove_an_unset_one():
    models = dict(MODELS, open={"hf": {"repo": "volta-lab/open", "revision": C1}})
    plan = model_plan([], models, "/srv/m", names=["tiny", "open"])
    assert model_token_files(plan, models, "/srv/m/") == [
        {"path": "/srv/m/.tokens/tiny", "content": "hf_x", "mode": "0600", "secret": True},
        {"path": "/srv/m/.tokens/open", "state": "absent"}]


def test_check_entries_name_each_model_with_its_source_and_token_file():
    models = dict(MODELS, open={"hf": {"repo": "volta-lab/open", "revision": C1}})
    plan = model_plan([], models, "/srv/m", names=["tiny", "open"])
    entries = model_check_entries(plan, "/srv/m/")
    assert entries == [{"name": "tiny", "source": plan[0]["source"], "token_file": "/srv/m/.tokens/tiny"},
                       {"name": "open", "source": plan[1]["source"], "token_file": ""}]
    assert "hf_x" not in repr(entries)  # the token stays in its file
    # The same path as the token file the role writes.
    assert entries[0]["token_file"] == model_token_files(plan, models, "/srv/m")[0]["path"]
    assert model_check_entries([], "/srv/m") == []
