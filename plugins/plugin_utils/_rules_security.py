# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The security rules of an instance: the engine bound to loopback only, no key in argv or environment,
an API key for every served instance, no ignored environment variable.

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE and the per-instance checks. The gateway's (plain HTTP), the example keys' and the key
shape's rules are checked by ``_gateway`` and ``_example_keys``; their catalogue is here.
"""

from __future__ import annotations

import difflib

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._rules_engine import managed_finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import flag_values, has_flag, is_loopback

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "bind-non-loopback": (ERROR, False, "an engine bound to a non-loopback address"),
    "no-api-key": (ERROR, False, "no API key configured for an instance"),
    "secret-in-plan": (ERROR, False, "an API key in argv or environment"),
    "secret-in-env": (WARNING, False, "an env name that looks like a secret (TOKEN, SECRET, PASSWORD, KEY)"),
    "example-key": (ERROR, False, "a published example API key outside a lab inventory"),
    "weak-api-key": (ERROR, False, "an API key with whitespace or other non-token characters, or under 32 long"),
    "plain-http-public": (ERROR, False, "the gateway open to non-private networks without TLS"),
    "plain-http-allowed": (WARNING, False, "plain HTTP to non-private networks, allowed explicitly"),
    "deprecated-env": (WARNING, False, "an environment variable the engine ignores"),
}


def check_security(inst, ctx):
    """The engine bound to loopback, no key in argv or env, no ignored env variable, a key for the instance."""
    return _check_bind(inst, ctx) + _check_key_args(inst, ctx) + _check_env(inst, ctx) + _check_has_key(inst, ctx)


def _check_bind(inst, ctx):
    host, name = ctx["host"], inst["name"]
    out = []
    for address in flag_values(inst["extra_args"] or [], ("--host",)):
        if not is_loopback(address):
            out.append(
                finding(
                    "bind-non-loopback",
                    host,
                    name,
                    "extra_args",
                    f"--host {address} binds the engine to a non-loopback address.",
                    "vLLM checks the key only on /v1 and leaves /health, /metrics, /tokenize and more open; "
                    "scans found an exposed engine within minutes.",
                    "remove --host from extra_args: the engine listens on 127.0.0.1 and the gateway serves "
                    "the public port with the key.",
                )
            )
        else:
            out.append(managed_finding(ctx, name, "--host", "bind_host (always 127.0.0.1)"))
    return out


def _check_key_args(inst, ctx):
    if not has_flag(inst["extra_args"] or [], ("--api-key", "--api-key-file")):
        return []
    return [
        finding(
            "secret-in-plan",
            ctx["host"],
            inst["name"],
            "extra_args",
            "extra_args passes an API key (--api-key / --api-key-file).",
            "a key on the command line is visible to every local user in the process list and in unit files.",
            "remove it and set api_gateway_keys: the key reaches the engine from a root-only "
            "EnvironmentFile (vLLM) or key file (llama.cpp).",
        )
    ]


def _check_env(inst, ctx):
    host, name = ctx["host"], inst["name"]
    out = []
    for key in sorted(inst["env"] or {}):
        if "API_KEY" in key.upper():
            out.append(
                finding(
                    "secret-in-plan",
                    host,
                    name,
                    "env",
                    f"env sets {key}.",
                    "the environment of the unit is readable in the unit file and by systemctl show.",
                    "remove it and set api_gateway_keys (the key goes to a root-only EnvironmentFile).",
                )
            )
        if key == "VLLM_ATTENTION_BACKEND":
            out.append(
                finding(
                    "deprecated-env",
                    host,
                    name,
                    "env",
                    "env sets VLLM_ATTENTION_BACKEND.",
                    "current vLLM ignores it (deprecated); the attention backend is a command-line flag.",
                    "remove it; put --attention-backend in extra_args if the profile's backend is not wanted.",
                )
            )
    return out


def _check_has_key(inst, ctx):
    host, name = ctx["host"], inst["name"]
    out = []
    # An instance whose name was refused has its own error; "add None to api_gateway_keys" would be a second one.
    key = inst.get("key_name") or name
    # A cluster's worker serves nothing itself: the head's gateway takes the requests.
    if inst["enabled"] and name and inst.get("cluster_role") != "worker" and not _has_key(key, ctx):
        out.append(
            finding(
                "no-api-key",
                host,
                name,
                "api_gateway_keys",
                "no API key is configured for this instance"
                + (f" (a replica of the service {key}: its key is api_gateway_keys[{key}])." if key != name else "."),
                "without a key anyone who reaches the public port can use the model.",
                _misspelt(key, ctx)
                + f"add {key} to api_gateway_keys (in Ansible Vault), set api_gateway_host_key, "
                "or set api_gateway_generate_keys: true.",
            )
        )
    return out


def _misspelt(key, ctx):
    """The fix's first words when api_gateway_keys has an entry whose name is close to *key* (a misspelt
    instance or service name: its key is never used), else ""."""
    close = difflib.get_close_matches(key, sorted(map(str, ctx["keyed_instances"])), n=1, cutoff=0.6)
    if not close:
        return ""
    return (f"api_gateway_keys has an entry {close[0]!r}, the closest to {key!r}; an entry named after no "
            f"instance or service of the host is never used: if it is meant for {key}, rename it to {key}. Else ")


def _has_key(name, ctx):
    return bool(ctx["generate_keys"] or ctx["host_key"] or name in ctx["keyed_instances"])
