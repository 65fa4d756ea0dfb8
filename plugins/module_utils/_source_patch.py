# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The source patch catalog and the engine behind volta.serving.source_patch.

A patch is data (:data:`CATALOG`): the file it targets inside an engine's
site-packages, the distributions and versions it may be applied to, the shape
of the file it expects, and, per patch site (an anchor line), how to tell the
unpatched, the already-patched and the fixed-upstream shapes apart. Applying
inserts whole lines between ``# >>> volta.serving: <name>`` and
``# <<< volta.serving: <name>`` markers next to each site; removing deletes
exactly those lines, so ``absent`` restores the original text.

Nothing here touches a file: :func:`plan` maps text to (result, new text).
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._pyreq import (
    RequirementError,
    canonical_name,
    specifier_contains,
)

FUSED_MOE = "vllm/model_executor/layers/fused_moe/fused_moe.py"
SM70_BLOCK_K_ENV = "VOLTA_SERVING_MOE_BLOCK_K_SM70"

CATALOG = {
    "fused_moe_int64_offsets": {
        "description": (
            "Cast offs_token to tl.int64 in the Triton fused MoE kernels before it is multiplied by "
            "stride_am, so that token offset * stride cannot overflow int32 (the upstream fix is vLLM "
            "PR #34507; releases with it are recognised as fixed upstream)."
        ),
        "target": FUSED_MOE,
        # Where the pre-fix shape is known (the kernel layout with sorted_token_ids / stride_am).
        "applies_to": {"vllm": ">=0.6.4", "1cat-vllm": ">=1.0.0"},
        # The file must still compute A's pointers from offs_token and stride_am.
        "file_requires": [r"offs_token\[:,\s*None\]\s*//\s*top_k\s*\*\s*stride_am"],
        "fixed_upstream_file": None,
        "anchor": r"^(?P<indent>[ \t]+)token_mask = offs_token < num_valid_tokens[ \t]*$",
        "position": "before",
        # The statement right before each anchor says which shape the site has.
        "window": "previous_statement",
        "site_fixed_upstream": [
            r"^\s*offs_token = offs_token\.to\(tl\.int64\)\s*$",
            r"^\s*offs_token = tl\.load\(.*\)\.to\(tl\.int64\)\s*$",
        ],
        "site_unpatched": [r"^\s*offs_token = tl\.(?:load|where)\(.*\)\s*$"],
        "insert": [
            "{indent}# >>> volta.serving: fused_moe_int64_offsets (int32 overflow of stride * offset, vLLM PR #34507)",
            "{indent}offs_token = offs_token.to(tl.int64)",
            "{indent}# <<< volta.serving: fused_moe_int64_offsets",
        ],
    },
    "fused_moe_sm70_block_k": {
        "description": (
            "Cap the default BLOCK_SIZE_K of the fp16/bf16 fused MoE config at {block_k} on SM70 GPUs "
            "(128 is very slow on V100 and 64 gives identical output, vLLM issue #47019). The environment "
            "variable " + SM70_BLOCK_K_ENV + " overrides the cap at run time (0 turns it off)."
        ),
        "target": FUSED_MOE,
        "applies_to": {"vllm": ">=0.11.0", "1cat-vllm": ">=1.0.0"},
        "file_requires": [r"def get_default_config\(", r"[\"']BLOCK_SIZE_K[\"']:\s*block_k\b"],
        # An upstream get_default_config that already special-cases SM70.
        "fixed_upstream_file": (
            r"def get_default_config\((?:(?!\ndef ).)*?"
            r"(?:is_device_capability\(\s*(?:70|\(\s*7\s*,\s*0\s*\))\s*\)"
            r"|get_device_capability\(\)\s*==\s*\(\s*7\s*,\s*0\s*\))"
        ),
        "anchor": r"^(?P<indent>[ \t]+)block_k = 128 if .* else 64[ \t]*$",
        "position": "after",
        "window": None,
        "site_fixed_upstream": [],
        "site_unpatched": [],
        "insert": [
            "{indent}# >>> volta.serving: fused_moe_sm70_block_k (BLOCK_SIZE_K 128 is slow on V100, vLLM #47019)",
            "{indent}import os as _volta_os",
            "{indent}_volta_cap = int(_volta_os.environ.get(\"" + SM70_BLOCK_K_ENV + "\", \"{block_k}\") or 0)",
            "{indent}if _volta_cap > 0 and block_k > _volta_cap:",
            "{indent}    try:",
            "{indent}        import torch as _volta_torch",
            "{indent}        _volta_cuda = _volta_torch.cuda",
            "{indent}        if _volta_cuda.is_available() and _volta_cuda.get_device_capability() == (7, 0):",
            "{indent}            block_k = _volta_cap",
            "{indent}    except Exception:  # never let the cap break the default config",
            "{indent}        pass",
            "{indent}# <<< volta.serving: fused_moe_sm70_block_k",
        ],
    },
}

RESULTS_PRESENT = ("patched", "already_patched", "fixed_upstream")
RESULTS_ABSENT = ("removed", "already_absent", "fixed_upstream")


class PatchError(Exception):
    """The file does not have a shape the patch knows; nothing was changed."""


def _begin(name):
    return f"# >>> volta.serving: {name}"


def _end(name):
    return f"# <<< volta.serving: {name}"


def render_block(name, indent, params):
    patch = CATALOG[name]
    return [line.replace("{indent}", indent).replace("{block_k}", str(params.get("block_k", 64)))
            for line in patch["insert"]]


def _is_statement(line):
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _our_block(lines, start, step, name):
    """Find our marked block next to index *start* going *step* (-1 up, +1 down): (first, last) or None."""
    if not (0 <= start < len(lines)):
        return None
    edge = _end(name) if step < 0 else _begin(name)
    other = _begin(name) if step < 0 else _end(name)
    if lines[start].strip().startswith(edge):
        i = start
        while 0 <= i < len(lines):
            if lines[i].strip().startswith(other):
                return (min(i, start), max(i, start))
            i += step
        raise PatchError(f"a {name} block starts at line {start + 1} but never ends: the file was edited by hand")
    return None


def describe(name, dist, version, path):
    what = f"{dist} {version}" if dist else f"version {version or 'unknown'}"
    return f"patch {name} on {path} ({what})"


def version_allowed(name, dist, version):
    """(allowed, reason). Unknown distribution/version: allowed on shape alone."""
    applies = CATALOG[name]["applies_to"]
    if not dist or not version:
        return True, "version unknown: applied on the file's shape alone"
    key = canonical_name(dist)
    if key not in applies:
        return False, f"{dist} is not a distribution this patch applies to ({', '.join(sorted(applies))})"
    try:
        ok = specifier_contains(applies[key], version)
    except RequirementError as exc:
        return False, str(exc)
    return ok, "" if ok else f"{dist} {version} is outside {applies[key]}"


def plan(name, text, state="present", params=None, dist=None, version=None, path="<file>"):
    """Decide what *state* means for *text*. Returns dict(result, changed, text, sites, message).

    Raises PatchError (naming the file, the version and the patch) for an unknown shape.
    """
    if name not in CATALOG:
        raise PatchError(f"unknown patch {name!r}; known: {', '.join(sorted(CATALOG))}")
    patch = CATALOG[name]
    params = dict(params or {})
    where = describe(name, dist, version, path)
    lines = text.split("\n")
    anchor = re.compile(patch["anchor"])
    sites = []
    i = 0
    while i < len(lines):
        match = anchor.match(lines[i])
        if match:
            sites.append((i, match.group("indent")))
        i += 1

    ours = []
    for idx, indent in sites:
        block = _our_block(lines, idx - 1, -1, name) if patch["position"] == "before" else \
            _our_block(lines, idx + 1, +1, name)
        if block:
            ours.append((idx, indent, block))
    stray = [i for i, line in enumerate(lines) if _begin(name) in line]
    if len(stray) != len(ours):
        raise PatchError(f"{where}: {len(stray)} {name} block(s) but {len(ours)} next to a patch site: "
                         "the file was edited after patching")

    if state == "absent":
        if not ours:
            upstream = bool(patch["fixed_upstream_file"]) and re.search(patch["fixed_upstream_file"], text, re.S)
            if not upstream and sites and patch["window"]:
                upstream = all(_classify(patch, lines, idx) == "fixed_upstream" for idx, _indent in sites)
            if upstream:
                return _out("fixed_upstream", False, text, [], f"{where}: fixed upstream, nothing to remove")
            return _out("already_absent", False, text, [], f"{where}: not applied")
        drop = set()
        for _idx, _indent, (first, last) in ours:
            drop.update(range(first, last + 1))
        new = "\n".join(line for i, line in enumerate(lines) if i not in drop)
        return _out("removed", True, new, [s[0] + 1 for s in ours], f"{where}: removed from {len(ours)} site(s)")

    if patch["fixed_upstream_file"] and not ours and re.search(patch["fixed_upstream_file"], text, re.S):
        return _out("fixed_upstream", False, text, [], f"{where}: fixed upstream, left alone")
    missing = [rx for rx in patch["file_requires"] if not re.search(rx, text, re.M)]
    if missing or not sites:
        what = f"no line matching {patch['anchor']!r}" if not sites else f"no match for {missing[0]!r}"
        raise PatchError(f"{where}: unrecognised file shape ({what}); not patched")

    by_site = {idx: block for idx, _indent, block in ours}
    edits = []  # (index to insert at, lines) or (first, last, lines) replacement
    states = []
    for idx, indent in sites:
        want = render_block(name, indent, params)
        if idx in by_site:
            first, last = by_site[idx]
            if lines[first:last + 1] == want:
                states.append("already_patched")
            else:
                states.append("updated")
                edits.append((first, last, want))
            continue
        shape = _classify(patch, lines, idx)
        if shape is None:
            window = _window_line(lines, idx)
            raise PatchError(f"{where}: unrecognised shape at line {idx + 1} "
                             f"({window.strip()!r} before {lines[idx].strip()!r}); not patched")
        states.append(shape)
        if shape == "unpatched":
            if patch["position"] == "before":
                edits.append((idx, idx - 1, want))
            else:
                edits.append((idx + 1, idx, want))
    site_lines = [idx + 1 for idx, _state in sites]
    if not edits:
        if all(s == "fixed_upstream" for s in states):
            return _out("fixed_upstream", False, text, site_lines, f"{where}: fixed upstream at line(s) "
                        f"{', '.join(map(str, site_lines))}, left alone")
        return _out("already_patched", False, text, site_lines, f"{where}: already applied")
    allowed, reason = version_allowed(name, dist, version)
    if not allowed:
        raise PatchError(f"{where}: refusing to patch: {reason}")
    new_lines = list(lines)
    for first, last, want in sorted(edits, key=lambda e: e[0], reverse=True):
        new_lines[first:last + 1] = want
    return _out("patched", True, "\n".join(new_lines), site_lines,
                f"{where}: applied at {len(edits)} site(s)" + (f" ({reason})" if reason else ""))


def _window_line(lines, idx):
    j = idx - 1
    while j >= 0 and not _is_statement(lines[j]):
        j -= 1
    return lines[j] if j >= 0 else ""


def _classify(patch, lines, idx):
    if patch["window"] is None:
        return "unpatched"
    prev = _window_line(lines, idx)
    for rx in patch["site_fixed_upstream"]:
        if re.match(rx, prev):
            return "fixed_upstream"
    for rx in patch["site_unpatched"]:
        if re.match(rx, prev):
            return "unpatched"
    return None


def _out(result, changed, text, sites, message):
    return {"result": result, "changed": changed, "text": text, "sites": sites, "message": message}


# Run as ``<venv python> -I -c LOCATE <relative path>``: where the file is and which
# installed distribution owns it.
LOCATE = r"""
import json, os, sys, sysconfig
import importlib.metadata as md
target = sys.argv[1]
found = None
for dist in md.distributions():
    for f in dist.files or []:
        if str(f).replace("\\", "/") == target:
            found = {"path": os.path.realpath(str(dist.locate_file(f))), "dist": dist.metadata["Name"],
                     "version": dist.version}
            break
    if found:
        break
if found is None:
    found = {"path": None, "purelib": sysconfig.get_paths()["purelib"]}
print(json.dumps(found))
"""
