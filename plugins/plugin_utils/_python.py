# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Python an engine runs on, per platform, and the glibc an engine needs.

Private to volta.serving. Pure Python (no Ansible imports): the engine role (filter
``engine_python_choice``), cuda_toolkit and the preflight rules (``_rules_software.check_platform``) read the
same tables and the same :func:`choose`, so the interpreter preflight approves is the one the engine
role installs.

The choice, per engine and platform: the distribution's own Python where the engine supports it
(its packages ``pythonX.Y`` and ``pythonX.Y-dev``, whose ``Python.h`` Triton's JIT and the vLLM source
build compile against), else a pinned CPython that uv installs under the engine root (it ships its
headers). An explicit ``python3.X`` or ``cpython-X.Y.Z`` is honoured, but refused when the engine's
Requires-Python excludes it.
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._pyreq import RequirementError, specifier_contains

# The distribution's Python and glibc, recorded from the archives' Packages files (python3, libc6)
# on 2026-11-30: Ubuntu jammy-updates python3 3.10.6-1~22.04.1, libc6 2.35-0ubuntu3.18; noble-updates
# python3 3.12.3-0ubuntu2.1, libc6 2.39-0ubuntu8.12; Debian bookworm python3 3.11.2-1+b1, libc6 2.36-9+deb12u14.
DISTRIBUTION_PYTHON = {
    ("Ubuntu", "22.04"): "3.10",
    ("Ubuntu", "24.04"): "3.12",
    ("Debian", "12"): "3.11",
}
DISTRIBUTION_GLIBC = {
    ("Ubuntu", "22.04"): "2.35",
    ("Ubuntu", "24.04"): "2.39",
    ("Debian", "12"): "2.36",
}

# Requires-Python of the pinned releases, read from their real core metadata on the Python index
# (tests/real/test_python_support.py checks each entry): vllm 0.21.0 "<3.15,>=3.10", torch 2.10.0
# and 2.11.0 ">=3.10". An engine's range is its own and its torch's together. A release missing here
# is not guessed: auto takes the distribution's Python and the engine role checks the release's real
# Requires-Python before anything big is downloaded (roles/engine/tasks/pins.yml).
REQUIRES_PYTHON = {
    "vllm": {"0.21.0": "<3.15,>=3.10"},
    "torch": {"2.10.0": ">=3.10", "2.11.0": ">=3.10"},
}
REQUIRES_PYTHON_SOURCE = "the releases' Requires-Python on the Python index"

# 1Cat-vLLM ships one wheel per release, tagged cp312-cp312-linux_x86_64: a plain linux tag declares
# no glibc floor (pip and uv install it anywhere; it fails at import on an older glibc). Its README's
# validated stack is Ubuntu 24.04 LTS with Python 3.12 (github 1CatAI/1Cat-vLLM); the floor 2.38 is
# the newest glibc symbol version its compiled extensions need (facts: "needs glibc >= 2.38").
# The interpreter follows the wheel's cpXY tag (wheel_requires_python).
ENGINE_GLIBC = {
    "onecat": {
        "min": "2.38",
        "why": "the 1Cat-vLLM wheel is built on Ubuntu 24.04 (its validated stack) and its compiled extensions "
        "need glibc 2.38 symbols; its tag (linux_x86_64, not manylinux) declares no floor, so the install "
        "succeeds and the import fails with \"version `GLIBC_2.38' not found\"",
        "fix": "run 1Cat-vLLM on Ubuntu 24.04 or newer, or serve this model with upstream vLLM built from "
        "source (engine: vllm) or with llama.cpp (engine: llamacpp, GGUF)",
    },
}
# The name of 1Cat-vLLM's release wheel (engine_onecat_wheel_url's default) when no wheel is named.
ONECAT_WHEEL = "1cat_vllm-{version}-cp312-cp312-linux_x86_64.whl"
ENGINE_NAMES = {"vllm": "vLLM", "onecat": "1Cat-vLLM"}

# uv's own CPython when the distribution's is not supported: one pin, installed under the engine root.
# uv 0.13.9 (engine_uv_version) lists cpython-3.12.16 as its newest 3.12 (`uv python list --only-downloads`).
DEFAULT_UV_PYTHON = "3.12.16"

_DIST_RE = re.compile(r"^python(3\.\d+)$")
_UV_RE = re.compile(r"^cpython-(3\.\d+)\.(\d+)$")
_UV_VERSION_RE = re.compile(r"^3\.\d+\.\d+$")
_CP_TAG_RE = re.compile(r"-cp(\d)(\d+)-[^-]+-[^-]+\.whl$")
_GLIBC_RE = re.compile(r"(?:glibc|GLIBC|GNU libc)[^0-9]*(\d+\.\d+)")
_BARE_RE = re.compile(r"^\s*(\d+\.\d+)\s*$")


class PythonChoiceError(ValueError):
    """An interpreter that cannot be used: the message says what, why and the fix."""


def platform_key(distribution, version):
    """``("Debian", "12")`` for Debian 12.x, ``("Ubuntu", "24.04")`` for Ubuntu; None when unknown."""
    distribution, version = str(distribution or ""), str(version or "")
    if not distribution or not version:
        return None
    if distribution == "Debian":
        version = version.split(".", maxsplit=1)[0]
    return distribution, version


def platform_text(distribution, version):
    return f"{distribution} {version}".strip() or "an unknown platform"


def wheel_requires_python(filename):
    """``"==3.12.*"`` for a ``...-cp312-cp312-linux_x86_64.whl``; None for an abi-free or unreadable name."""
    match = _CP_TAG_RE.search(str(filename or ""))
    return f"=={match.group(1)}.{match.group(2)}.*" if match else None


def engine_requires(engine, version, torch_version, wheel=None, metadata=None):
    """``(specifier, source)`` of what *engine* at *version* takes, or ``(None, why)`` when not recorded.

    *metadata*: the release's Requires-Python as read from its core metadata on the host (pins.yml), which
    takes the place of the recorded one.
    """
    name = ENGINE_NAMES.get(engine, engine)
    if metadata:
        own, tag = str(metadata), " (its metadata)"
    elif engine == "onecat":
        own, tag = wheel_requires_python(wheel or ONECAT_WHEEL.format(version=version)), " (its wheel's tag)"
    else:
        own, tag = REQUIRES_PYTHON.get(engine, {}).get(str(version)), ""
    if own is None:
        return None, f"Requires-Python of {name} {version} is not recorded"
    parts, sources = [own], [f"{name} {version}: {own}{tag}"]
    torch = REQUIRES_PYTHON["torch"].get(str(torch_version))
    if torch:
        parts.append(torch)
        sources.append(f"torch {torch_version}: {torch}")
    return ",".join(parts), "; ".join(sources)


def parse_explicit(value):
    """``("distribution", "3.11")`` for ``python3.11``, ``("uv", "3.12.16")`` for ``cpython-3.12.16``."""
    text = str(value or "").strip()
    match = _DIST_RE.match(text)
    if match:
        return "distribution", match.group(1)
    match = _UV_RE.match(text)
    if match:
        return "uv", f"{match.group(1)}.{match.group(2)}"
    raise PythonChoiceError(
        f"{text!r} is not an interpreter volta.serving installs. Fix: set python3.X (the distribution's package, "
        "e.g. python3.11) or cpython-X.Y.Z (a CPython uv installs, e.g. cpython-3.12.16), or leave it empty (auto)"
    )


def _allows(requires, version):
    if not requires:
        return True
    try:
        return specifier_contains(requires, version)
    except RequirementError:
        return False


def _result(source, version, why):
    minor = ".".join(version.split(".")[:2])
    if source == "distribution":
        request, packages = f"python{minor}", [f"python{minor}", f"python{minor}-dev"]
    else:
        request, packages = f"cpython-{version}", []
    return {"source": source, "version": version, "minor": minor, "request": request,
            "name": f"python{minor}", "packages": packages, "uv_version": version if source == "uv" else "",
            "why": why}


def _explicit(request, requires, where, engine_text):
    try:
        source, version = parse_explicit(request["explicit"])
    except PythonChoiceError as exc:
        raise PythonChoiceError(f"{request['variable']} {exc}") from exc
    if not _allows(requires, version):
        raise PythonChoiceError(
            f"{request['variable']} is {request['explicit']} (Python {version}), which {engine_text} does not "
            f"support ({where}). Fix: leave {request['variable'].split()[0]} empty (auto: the distribution's Python "
            "where supported, else uv's CPython) or name a Python in that range"
        )
    how = "the distribution's package" if source == "distribution" else "installed by uv"
    return _result(source, version, f"{request['variable']} = {request['explicit']} ({how})")


def choose(request):
    """The interpreter of one engine on one host.

    *request*: ``distribution``, ``version`` (Ansible's distribution and distribution_version),
    ``engine`` (vllm, onecat; empty for "the distribution's Python" of cuda_toolkit), ``engine_version``,
    ``torch_version``, ``wheel`` (1Cat: the wheel's file name), ``explicit`` (the variable's value, empty
    for auto), ``variable`` (its name, for messages), ``uv_version`` (the pinned CPython) and, once read from
    the release's metadata, ``requires_python`` (replaces the recorded range).

    Returns ``source`` (distribution or uv), ``version``, ``minor``, ``request`` (what ``uv venv --python``
    is given: python3.11 or cpython-3.12.16), ``name`` (pythonX.Y, for the wheel's cache key),
    ``packages`` (apt), ``uv_version``, ``requires`` and ``why``. Raises :class:`PythonChoiceError`.
    """
    request = {"variable": "engine_python", "uv_version": DEFAULT_UV_PYTHON, **request}
    engine = request.get("engine") or ""
    engine_text = f"{ENGINE_NAMES.get(engine, engine)} {request.get('engine_version', '')}".strip()
    requires, where = (None, "no engine") if not engine else engine_requires(
        engine, request.get("engine_version"), request.get("torch_version"), request.get("wheel"),
        request.get("requires_python"))
    if request.get("explicit"):
        return {**_explicit(request, requires, where, engine_text), "requires": requires or ""}
    key = platform_key(request.get("distribution"), request.get("version"))
    plat = platform_text(request.get("distribution"), request.get("version"))
    own = DISTRIBUTION_PYTHON.get(key)
    if own and _allows(requires, own):
        if requires:
            why = f"{plat} ships Python {own}, which {engine_text} supports ({where})"
        else:
            why = f"{plat} ships Python {own}" + (f" ({where})" if engine else "")
        return {**_result("distribution", own, why), "requires": requires or ""}
    uv_version = str(request["uv_version"])
    if not _UV_VERSION_RE.match(uv_version) or not _allows(requires, uv_version):
        raise PythonChoiceError(
            f"{engine_text or 'the engine'} needs a Python that {plat} does not ship ({where}), and the pinned "
            f"CPython engine_python_uv_version {uv_version!r} is not one it supports. Fix: set "
            "engine_python_uv_version to an X.Y.Z CPython in that range (one uv lists: uv python list "
            "--only-downloads), or name the interpreter in " + request["variable"]
        )
    if own:
        why = f"{plat} ships Python {own}, which {engine_text} does not support ({where})"
    else:
        why = f"the Python of {plat} is not recorded" if key else "the distribution is not known (not read)"
    why += f": CPython {uv_version} installed by uv"
    return {**_result("uv", uv_version, why), "requires": requires or ""}


def parse_glibc(text):
    """``"2.36"`` from ``getconf GNU_LIBC_VERSION`` (``glibc 2.36``) or ``ldd --version``; None when unreadable."""
    match = _GLIBC_RE.search(str(text or "")) or _BARE_RE.match(str(text or ""))
    return match.group(1) if match else None


def glibc_below(found, floor):
    """True when glibc *found* (``"2.36"``) is older than *floor* (``"2.38"``)."""
    def parts(text):
        return tuple(int(p) for p in str(text).split("."))
    return parts(found) < parts(floor)
