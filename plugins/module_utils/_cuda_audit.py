# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL / CUDA wheel audit behind volta.serving.pip_cuda_audit.

A venv is read through its own interpreter with :data:`PROBE` (stdlib only,
``importlib.metadata``), which prints one JSON document: the marker
environment and every installed distribution with its version, its
``Requires-Dist`` and whether it installs files under ``nvidia/``. Everything
else here is pure functions over that document, so unit tests feed it tables.

Source of truth: the root distribution's (torch's) ``Requires-Dist``, followed
transitively through the installed distributions and the extras they are
asked for. That is how a real cu130 torch, which pins
``cuda-toolkit[cublas,...]==13.0.2`` rather than the libraries themselves,
still yields exact pins for ``nvidia-cublas`` (``==13.1.0.3.*``) and the rest.
"""

from __future__ import annotations

import json
import re

from ansible_collections.volta.serving.plugins.module_utils._pyreq import (
    RequirementError,
    canonical_name,
    evaluate_marker,
    format_requirement,
    parse_requirement,
    specifier_contains,
)

KINDS = ("mixed_cuda_suffix", "duplicate_nccl", "version_mismatch", "unwanted", "missing")

# Run as ``<venv python> -I -c PROBE``: isolated mode, so neither the working directory nor
# PYTHON* variables change what the venv sees. Python >= 3.8.
PROBE = r"""
import json, os, platform, sys
try:
    import importlib.metadata as md
except ImportError:
    print(json.dumps({"error": "importlib.metadata is missing (Python %s)" % platform.python_version()}))
    raise SystemExit(0)
impl = sys.implementation.version
env = {
    "os_name": os.name,
    "sys_platform": sys.platform,
    "platform_machine": platform.machine(),
    "platform_python_implementation": platform.python_implementation(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "python_full_version": platform.python_version(),
    "implementation_name": sys.implementation.name,
    "implementation_version": "%d.%d.%d" % (impl.major, impl.minor, impl.micro),
}
dists = []
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name:
        continue
    files = dist.files
    dists.append({
        "name": name,
        "version": dist.version,
        "requires": list(dist.requires or []),
        "files_known": files is not None,
        "cuda_files": bool(files) and any(str(f).replace("\\", "/").startswith("nvidia/") for f in files),
    })
print(json.dumps({"python": sys.executable, "prefix": sys.prefix,
                  "base_prefix": getattr(sys, "base_prefix", sys.prefix), "env": env, "distributions": dists}))
"""

_SUFFIX_RE = re.compile(r"-cu(\d+)$")


class AuditError(Exception):
    """The venv could not be read or its metadata makes no sense."""


def parse_probe(text):
    """Read the probe's JSON output; raise AuditError with the text when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise AuditError(f"the venv probe printed no JSON ({exc}): {text[:500]!r}") from exc
    if "error" in data:
        raise AuditError(data["error"])
    base = data.get("base_prefix")
    if base is not None and base == data.get("prefix"):
        raise AuditError(
            f"{data.get('python')} is not a venv's interpreter (its prefix is the installation's own, {base}): "
            "the audit reads and the clean changes one engine venv only, never a system Python. "
            "Point python at <venv>/bin/python"
        )
    return data


def probe_failure(python, rc, out, err):
    """One line for an interpreter that failed to run the probe, with a reason even when it printed none."""
    reason = (err or out or "").strip()[-2000:]
    if not reason:
        reason = f"killed by signal {-rc}" if rc < 0 else "it printed nothing"
    return f"{python} could not read its own metadata (rc={rc}): {reason}"


def index_distributions(distributions):
    """Canonical name -> the distribution Python imports (the first one found on sys.path)."""
    out = {}
    for dist in distributions:
        out.setdefault(canonical_name(dist["name"]), dist)
    return out


def is_cuda_library(dist, ignore=()):
    """An ``nvidia-*`` wheel that ships CUDA libraries (files under ``nvidia/``).

    ``nvidia-ml-py`` and friends install plain Python modules (``pynvml.py``), not
    libraries; they are neither pinned by torch nor part of the conflict, so they are
    left out. When a distribution does not list its files it is counted.
    """
    key = canonical_name(dist["name"])
    if not key.startswith("nvidia-") or key in {canonical_name(i) for i in ignore}:
        return False
    return bool(dist.get("cuda_files")) or not dist.get("files_known", True)


def _walk(req, by_key, env, wanted, reached, seen, via):
    key = req["key"]
    if key.startswith("nvidia-"):
        entry = wanted.setdefault(key, {"name": req["name"], "specifiers": [], "via": []})
        if req["specifier"] and req["specifier"] not in entry["specifiers"]:
            entry["specifiers"].append(req["specifier"])
        if via not in entry["via"]:
            entry["via"].append(via)
        reached.add(key)
    dist = by_key.get(key)
    if dist is None:
        return
    extras = tuple(sorted(req["extras"]))
    if (key, extras) in seen:
        return
    seen.add((key, extras))
    for raw in dist.get("requires") or []:
        child = parse_requirement(raw)
        if evaluate_marker(child["marker"], env, ("", *extras)):
            _walk(child, by_key, env, wanted, reached, seen, dist["name"])


def resolve_wanted(by_key, env, root="torch"):
    """What the root distribution wants, transitively.

    Returns (wanted, roots): wanted maps each ``nvidia-*`` name to
    ``{name, specifiers, via}``; roots are the root's own requirements (text, markers
    evaluated away) through which any ``nvidia-*`` wheel is reached: exactly what a
    clean reinstall must ask for.
    """
    root_dist = by_key[canonical_name(root)]
    wanted, roots = {}, []
    for raw in root_dist.get("requires") or []:
        req = parse_requirement(raw)
        if not evaluate_marker(req["marker"], env):
            continue
        reached = set()
        _walk(req, by_key, env, wanted, reached, set(), root_dist["name"])
        if reached:
            roots.append(format_requirement(req))
    return wanted, roots


def _finding(kind, distribution, installed, wanted, message):
    return {"kind": kind, "distribution": distribution, "installed": installed, "wanted": wanted,
            "message": message}


def audit(inventory, root="torch", ignore=()):
    """Judge a probed venv. Returns a dict (see the module's RETURN)."""
    env = inventory.get("env") or {}
    by_key = index_distributions(inventory.get("distributions") or [])
    cuda = {k: d for k, d in sorted(by_key.items()) if is_cuda_library(d, ignore)}
    installed = {d["name"]: d["version"] for d in cuda.values()}
    result = {"findings": [], "installed": installed, "wanted": {}, "reinstall": [], "root": None}
    root_key = canonical_name(root)
    if root_key not in by_key:
        result["findings"].append(_finding(
            "missing", root, None, None,
            f"{root} is not installed in this venv, so there are no pins to compare against"))
        result["consistent"] = False
        return result
    root_dist = by_key[root_key]
    result["root"] = {"name": root_dist["name"], "version": root_dist["version"]}
    try:
        wanted, roots = resolve_wanted(by_key, env, root)
    except RequirementError as exc:
        raise AuditError(f"cannot read the metadata below {root} {root_dist['version']}: {exc}") from exc
    result["wanted"] = {e["name"]: ",".join(e["specifiers"]) for e in wanted.values()}
    result["reinstall"] = roots
    findings = result["findings"]

    suffixes = {}
    for key, dist in cuda.items():
        match = _SUFFIX_RE.search(key)
        if match:
            suffixes.setdefault(f"cu{match.group(1)}", []).append(dist["name"])
    if len(suffixes) > 1:
        wanted_suffixes = sorted({m.group(0)[1:] for m in (_SUFFIX_RE.search(k) for k in wanted) if m})
        listing = "; ".join(f"{s}: {', '.join(sorted(n))}" for s, n in sorted(suffixes.items()))
        findings.append(_finding(
            "mixed_cuda_suffix", ", ".join(sorted(n for names in suffixes.values() for n in names)), listing,
            ", ".join(wanted_suffixes) or None,
            f"nvidia-* wheels of more than one CUDA major version are installed ({listing}); "
            f"{root} {root_dist['version']} wants {', '.join(wanted_suffixes) or 'none of them'}"))

    nccl = [d for k, d in cuda.items() if k.startswith("nvidia-nccl")]
    if len(nccl) > 1:
        have = ", ".join(f"{d['name']} {d['version']}" for d in nccl)
        want = ", ".join(f"{e['name']}{','.join(e['specifiers'])}" for k, e in sorted(wanted.items())
                         if k.startswith("nvidia-nccl")) or None
        findings.append(_finding(
            "duplicate_nccl", ", ".join(d["name"] for d in nccl), have, want,
            f"{len(nccl)} NCCL distributions are installed ({have}); they install the same libnccl.so.2, "
            f"so which one loads is an accident (undefined symbols or hangs at multi-GPU start). "
            f"{root} wants {want or 'none'}"))

    for key, dist in cuda.items():
        entry = wanted.get(key)
        if entry is None:
            findings.append(_finding(
                "unwanted", dist["name"], dist["version"], None,
                f"{dist['name']} {dist['version']} is installed but {root} {root_dist['version']} does not "
                "require it (directly or through its requirements)"))
            continue
        spec = ",".join(entry["specifiers"])
        try:
            ok = specifier_contains(spec, dist["version"])
        except RequirementError as exc:
            raise AuditError(f"{dist['name']}: {exc}") from exc
        if not ok:
            findings.append(_finding(
                "version_mismatch", dist["name"], dist["version"], spec,
                f"{dist['name']} {dist['version']} is installed but {' and '.join(entry['via'])} "
                f"require{'s' if len(entry['via']) == 1 else ''} {dist['name']}{spec}"))
    for key, entry in sorted(wanted.items()):
        if key not in by_key:
            spec = ",".join(entry["specifiers"])
            findings.append(_finding(
                "missing", entry["name"], None, spec or None,
                f"{entry['name']}{spec} is required by {' and '.join(entry['via'])} but not installed"))
    result["consistent"] = not findings
    return result


def state_lines(installed):
    """The installed CUDA libraries as diff text."""
    return "".join(f"{name}=={version}\n" for name, version in sorted(installed.items(), key=lambda i: i[0].lower()))


def predicted_after(result):
    """What a clean should leave: the wanted set, exact pins written as versions."""
    out = {}
    for name, spec in result["wanted"].items():
        if spec.startswith("==") and "," not in spec:
            out[name] = spec[2:]
        else:
            out[name] = spec or "(any version)"
    return out


def clean_commands(python, index_url, uninstall, reinstall, uv=None):
    """argv lists that uninstall *uninstall* and install *reinstall* from *index_url* only."""
    commands = []
    if uv:
        if uninstall:
            commands.append([uv, "pip", "uninstall", "--python", python, *uninstall])
        if reinstall:
            commands.append([uv, "pip", "install", "--python", python, "--index-url", index_url, *reinstall])
    else:
        if uninstall:
            commands.append([python, "-m", "pip", "uninstall", "--yes", *uninstall])
        if reinstall:
            commands.append([python, "-m", "pip", "install", "--no-input", "--index-url", index_url, *reinstall])
    return commands
