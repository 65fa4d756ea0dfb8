# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/plugin_utils/_api_keys.py: the API key of every instance and the files that carry it."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter.systemd_quote import systemd_env_file
from ansible_collections.volta.serving.plugins.plugin_utils import _api_keys

KEY = "a" * 32
HOST = "h" * 40
GEN = "0123456789abcdef" * 4
SECRETS = "/etc/volta/secrets"


def inst(name, key_name=None, key_owner=None, env=True, key_file=False, secret_env_names=()):
    return {"name": name, "key_name": key_name or name, "key_owner": key_owner or name,
            "environment_file": f"{SECRETS}/{name}.env" if env else "",
            "api_key_env": "VLLM_API_KEY" if env else "",
            "api_key_file": f"{SECRETS}/{name}.key" if key_file else "",
            "secret_env_names": list(secret_env_names)}


CHAT = inst("chat")
LLAMA = inst("llama", env=False, key_file=True)
# Two replicas of service "svc": one key name, the first replica owns a generated key.
SVC_A = inst("svc-a", key_name="svc", key_owner="svc-a")
SVC_B = inst("svc-b", key_name="svc", key_owner="svc-a")


@pytest.mark.parametrize(("keys", "host_key", "generate", "expected"), [
    ({}, "", False, []),
    ({}, "", True, ["chat", "svc-a"]),
    ({"chat": KEY}, "", True, ["svc-a"]),
    ({"chat": KEY, "svc": ""}, "", True, ["svc-a"]),
    ({}, HOST, True, []),
])
def test_to_generate_names_the_key_owners_without_a_key(keys, host_key, generate, expected):
    assert _api_keys.to_generate([CHAT, SVC_A, SVC_B], keys, host_key, generate) == expected


@pytest.mark.parametrize(("keys", "host_key", "generated", "expected"), [
    ({"chat": KEY}, "", {}, {"chat": KEY}),
    ({"chat": ""}, HOST, {}, {"chat": HOST, "svc-a": HOST, "svc-b": HOST}),
    ({"svc": KEY}, "", {}, {"svc-a": KEY, "svc-b": KEY}),
    ({}, "", {"svc-a": GEN, "chat": GEN[::-1]}, {"chat": GEN[::-1], "svc-a": GEN, "svc-b": GEN}),
    ({"chat": KEY}, HOST, {"chat": GEN}, {"chat": KEY, "svc-a": HOST, "svc-b": HOST}),
    ({}, "", {}, {}),
])
def test_resolve_takes_the_inventory_key_then_the_host_key_then_the_generated_one(keys, host_key, generated,
                                                                                  expected):
    assert _api_keys.resolve([CHAT, SVC_A, SVC_B], keys, host_key, generated) == expected


@pytest.mark.parametrize(("resolved", "pending", "expected"), [
    ({"chat": KEY, "svc-a": KEY, "svc-b": KEY}, (), []),
    ({"chat": "short", "svc-a": KEY}, (), ["chat", "svc-b"]),
    ({"chat": KEY + " space"}, (), ["chat", "svc-a", "svc-b"]),
    ({"chat": KEY}, ("svc-a",), []),
])
def test_bad_names_the_instances_without_a_bearer_token(resolved, pending, expected):
    assert _api_keys.bad([CHAT, SVC_A, SVC_B], resolved, pending) == expected


def test_the_refusal_names_the_instances_and_never_a_key():
    message = _api_keys.bad_message("gpu-a", ["chat", "svc-b"])
    assert message.startswith("gpu-a: instance(s) chat, svc-b: field api_gateway_keys: no key")
    assert "api_gateway_generate_keys: true" in message


def test_key_files_carry_the_key_and_the_secret_env_with_their_modes():
    chat = inst("chat", secret_env_names=["HF_TOKEN"])
    files = _api_keys.key_files([chat, LLAMA, SVC_A], {"chat": KEY, "llama": HOST}, {"chat": {"HF_TOKEN": "t$x"}},
                                "volta", systemd_env_file)
    assert files == [
        {"path": f"{SECRETS}/chat.env", "content": f'HF_TOKEN="t\\$x"\nVLLM_API_KEY="{KEY}"\n',
         "owner": "root", "group": "root", "mode": "0600", "secret": True},
        {"path": f"{SECRETS}/llama.key", "content": HOST + "\n",
         "owner": "root", "group": "volta", "mode": "0640", "secret": True},
    ]


def test_secret_envs_takes_the_first_entry_of_each_name():
    given = [{"name": "chat", "secret_env": {"A": "1"}}, {"name": "chat", "secret_env": {"B": "2"}},
             {"name": "other"}, "not a mapping"]
    assert _api_keys.secret_envs(given) == {"chat": {"A": "1"}}


def test_manifest_and_directories():
    assert _api_keys.manifest([CHAT, LLAMA], SECRETS) == {
        "path": f"{SECRETS}/.volta-serving-key-files",
        "paths": [f"{SECRETS}/chat.env", f"{SECRETS}/llama.key"],
        "match": r"^/etc/volta/secrets/[^/]+\.(env|key)$",
        "secret": True,
    }
    assert _api_keys.directories([CHAT], SECRETS, "volta") == [
        {"path": SECRETS, "owner": "root", "group": "volta", "mode": "0750"}]
    assert _api_keys.directories([], SECRETS, "volta") == []


@pytest.mark.parametrize(("paths", "expected"), [
    ([], []),
    ([f"{SECRETS}/llama.key", f"{SECRETS}/chat.env"], ["chat", "llama"]),
    ([f"{SECRETS}/chat.env", f"{SECRETS}/other.env"], ["chat"]),
])
def test_changed_names_the_instances_whose_files_changed_in_plan_order(paths, expected):
    assert _api_keys.changed([CHAT, LLAMA], paths) == expected
