# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine role's settings refusals: flavours, engine_keep and the pins each flavour needs.

Pure Python, no Ansible imports. Served by the ``volta.serving.engine_settings_problems`` filter to
volta.serving.engine's preflight (run by playbooks/settings.yml on the controller and again by the
role). The checks run in the order the role has always made them; the first refusal fails the host.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._shapes import jinja_int

SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def _pinned(value):
    return isinstance(value, str) and SHA256.search(value) is not None


def _quoted_or_unset(value):
    return f'"{value}"' if value else "not set"


def flavours_problem(host, flavours, known, settings):
    unknown = [f for f in flavours if f not in known]
    if not unknown:
        return ""
    return f"unknown engine flavour(s) {', '.join(unknown)}; known: {', '.join(known)}"


def keep_problem(host, flavours, known, settings):
    keep = settings.get("engine_keep")
    if jinja_int(keep) >= 1:
        return ""
    return f"engine_keep must be at least 1 (the install to roll back to), got {keep}"


def onecat_problem(host, flavours, known, settings):
    sha = settings.get("engine_onecat_sha256") or ""
    if "onecat" not in flavours or _pinned(sha):
        return ""
    wheel = str(settings.get("engine_onecat_wheel_url") or "").rsplit("/", 1)[-1]
    return (f"{host}: engine_onecat_sha256 is {_quoted_or_unset(sha)}. Why: an instance runs on 1Cat-vLLM, and its "
            f"wheel ({wheel}) is only installed when it matches a pinned sha256 (there is no default). Fix: set "
            "engine_onecat_sha256 to the 64-hex-digit sha256 of the wheel you reviewed "
            f"(sha256sum {wheel}).")


def llamacpp_problem(host, flavours, known, settings):
    ref = settings.get("engine_llamacpp_ref") or ""
    sha = settings.get("engine_llamacpp_source_sha256") or ""
    if "llamacpp" not in flavours or (ref and _pinned(sha)):
        return ""
    url = f", {settings.get('engine_llamacpp_source_url')}" if ref else ""
    return (f"{host}: engine_llamacpp_ref is {ref or 'not set'} and engine_llamacpp_source_sha256 is "
            f"{sha or 'not set'}. Why: an instance runs on llama.cpp, which is built from a pinned source archive "
            "(there are no defaults). Fix: set engine_llamacpp_ref (a release tag such as b1234) and "
            "engine_llamacpp_source_sha256 (the sha256 of the archive engine_llamacpp_source_url names for that "
            f"tag{url}).")


def vllm_source_problem(host, flavours, known, settings):
    url = settings.get("engine_vllm_source_url") or ""
    sha = settings.get("engine_vllm_source_sha256") or ""
    if "vllm" not in flavours or not url or _pinned(sha):
        return ""
    return (f"{host}: engine_vllm_source_url is {url} but engine_vllm_source_sha256 is {_quoted_or_unset(sha)}. "
            "Why: a source archive is only built when it matches a pinned sha256. Fix: set engine_vllm_source_sha256 "
            "to the 64-hex-digit sha256 of the archive you reviewed, or empty engine_vllm_source_url to build the "
            "release's sdist from the index.")


CHECKS = (flavours_problem, keep_problem, onecat_problem, llamacpp_problem, vllm_source_problem)


def settings_problems(settings, host, flavours, known):
    """Every refusal of *settings* (the engine_* variables by name) for *host* and its *flavours*, in check order."""
    flavours, known = list(flavours or []), list(known or [])
    return [problem for problem in (check(host, flavours, known, settings) for check in CHECKS) if problem]
