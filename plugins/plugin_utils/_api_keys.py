# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API keys of a host's instances (internal role volta.serving._api_keys, action volta.serving.api_keys).

Per enabled instance of the serving plan: its key name's key (api_gateway_keys[key_name], its own name or its
service's for a replica), else the host's key (api_gateway_host_key), else the key generated on the host for
its key owner (itself, or its service's first replica; api_gateway_generate_keys). The files the engines read
(the unit's EnvironmentFile, llama.cpp's --api-key-file) are described here for one volta.serving.files call.
Keys are secrets: no key ever enters a message or an exception. Controller only.
"""

from __future__ import annotations

import re

# A Bearer token (RFC 6750 token68 characters), long enough to be a key (preflight refuses the others
# first: _gateway.check_key_shapes).
KEY_RE = re.compile(r"^[A-Za-z0-9._~+/=-]{32,}\Z")
MANIFEST_NAME = ".volta-serving-key-files"


def to_generate(instances, keys, host_key, generate):
    """The key owners whose key is generated on the host: those of the instances whose key name has no key."""
    if not generate or host_key:
        return []
    given = {name for name, value in (keys or {}).items() if value}
    return sorted({inst["key_owner"] for inst in instances if inst["key_name"] not in given})


def resolve(instances, keys, host_key, generated):
    """Instance name -> its key; an instance without one is left out. *generated*: key owner -> key text."""
    out = {}
    for inst in instances:
        key = (keys or {}).get(inst["key_name"]) or host_key or (generated or {}).get(inst["key_owner"]) or ""
        if key:
            out[inst["name"]] = str(key)
    return out


def bad(instances, resolved, pending=()):
    """The instances without a usable Bearer token, sorted; those whose key owner is in *pending* (a key not
    generated yet, check mode) are not counted."""
    return sorted(inst["name"] for inst in instances
                  if not KEY_RE.match(resolved.get(inst["name"], "")) and inst["key_owner"] not in pending)


def bad_message(host, names):
    """The refusal for *names* (never a key)."""
    return (f"{host}: instance(s) {', '.join(names)}: field api_gateway_keys: no key, or a key that is not a Bearer "
            "token (keys are not shown). Why: the gateway compares it and clients send 'Authorization: Bearer "
            "<key>'. Fix: give each instance a key in api_gateway_keys (Ansible Vault), or set api_gateway_host_key "
            "or api_gateway_generate_keys: true; a key is at least 32 of A-Z a-z 0-9 . _ ~ + / = - (for example "
            "openssl rand -hex 32).")


def secret_envs(volta_instances):
    """Instance name -> the secret_env mapping the inventory gives it (the plan carries only the names)."""
    out = {}
    for entry in volta_instances or []:
        if isinstance(entry, dict) and "name" in entry and "secret_env" in entry and entry["name"] not in out:
            out[entry["name"]] = entry["secret_env"] or {}
    return out


def key_files(instances, resolved, envs, group, env_file_text):
    """The volta.serving.files entries of every resolved instance: its EnvironmentFile (root:root 0600; the key
    in api_key_env and its secret_env) and its key file (root:<group> 0640). *env_file_text* renders a mapping
    as an EnvironmentFile (the systemd_env_file filter)."""
    out = []
    for inst in instances:
        if inst["name"] not in resolved:
            continue
        key = resolved[inst["name"]]
        if inst.get("environment_file"):
            env = {inst["api_key_env"]: key} if inst.get("api_key_env") else {}
            if inst.get("secret_env_names"):
                env.update(envs.get(inst["name"]) or {})
            out.append({"path": inst["environment_file"], "content": env_file_text(env),
                        "owner": "root", "group": "root", "mode": "0600", "secret": True})
        if inst.get("api_key_file"):
            out.append({"path": inst["api_key_file"], "content": key + "\n",
                        "owner": "root", "group": group, "mode": "0640", "secret": True})
    return out


def manifest(instances, secrets_dir):
    """The list of the key files the role writes (the files call removes what an earlier run listed and this run
    no longer writes; entries outside the secrets directory are ignored)."""
    return {"path": f"{secrets_dir}/{MANIFEST_NAME}",
            "paths": ([i["environment_file"] for i in instances if i.get("environment_file")]
                      + [i["api_key_file"] for i in instances if i.get("api_key_file")]),
            "match": "^" + re.escape(secrets_dir) + r"/[^/]+\.(env|key)$",
            "secret": True}


def directories(instances, secrets_dir, group):
    """The secrets directory (root:<group> 0750), when the host runs an instance."""
    return [{"path": secrets_dir, "owner": "root", "group": group, "mode": "0750"}] if instances else []


def changed(instances, changed_paths):
    """The instances whose environment file or key file is among *changed_paths*, in plan order (those of
    changed environment files first)."""
    paths = set(changed_paths or [])
    out = [i["name"] for i in instances if i.get("environment_file") in paths]
    out += [i["name"] for i in instances if i.get("api_key_file") in paths and i["name"] not in out]
    return out
