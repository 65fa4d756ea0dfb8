# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The source patch catalog and the engine behind volta.serving.source_patch.

A patch is data (:data:`CATALOG`): the file it targets inside an engine's
site-packages, the distributions and versions it may be applied to, the shape
of the file it expects, where its patch sites (anchor lines) must be (one in
each function the shape names, e.g. every Triton MoE kernel), and how to tell
the unpatched, the already-patched, the fixed-upstream and the not-needed
shapes apart. Applying inserts whole lines between
``# >>> volta.serving: <name>`` and ``# <<< volta.serving: <name>`` markers next
to each site; removing deletes exactly those lines, so ``absent`` restores the
original text.

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

# Shapes recorded from the real fused_moe.py of vLLM 0.6.4, 0.6.5, 0.6.6, 0.7.0, 0.7.2, 0.7.3, 0.8.0,
# 0.8.5, 0.10.0, 0.11.0, 0.12.0, 0.13.0, 0.14.1, 0.15.1, 0.16.0, 0.17.0, 0.19.1, 0.21.0 and 0.33.0 (the
# newest; sdists and wheels from the Python index) and of 1Cat-vLLM at every tag from v0.0.2 to v1.3.0
# and at v1.3.0-8-gae13773a0 (its git repository, 2026-08-22):
# - pre PR #34507 (vLLM 0.6.4 ... 0.16.0, 1Cat up to v1.1.0): each kernel that computes A's pointers
#   from offs_token * stride_am assigns offs_token with tl.load(...) right before `token_mask = ...`,
#   or (0.14.1 and later, fused_moe_kernel) inside `if not naive_block_assignment:` / `else:` where the
#   else branch is a multi-line `offs_token = tl.where(` ... `)`; one kernel up to 0.7.0, two
#   (fused_moe_kernel_gptq_awq and fused_moe_kernel) from 0.7.2;
# - fixed (vLLM 0.17.0 ... 0.33.0, 1Cat v1.2.0 and later): `offs_token = tl.load(...).to(tl.int64)`,
#   or `offs_token = offs_token.to(tl.int64)` after the if/else, before `token_mask = ...`;
# - get_default_config: fixed tiles (BLOCK_SIZE_K 64 or 32 for fp16/bf16) up to 0.16.0, then
#   `block_k = 128 if dtype == "fp8_w8a8" or M <= 64 else 64` (0.17.0 ... 0.33.0); 1Cat v1.2.0 and
#   later put an SM70 branch before it (`elif (envs.VLLM_SM70_UNQUANTIZED_MOE_0DOT3_CONFIG and
#   dtype is None and block_shape is None and current_platform.is_cuda() and
#   current_platform.has_device_capability(70) and not current_platform.has_device_capability(75)):`
#   with BLOCK_SIZE_K 64 / 32), so the 128 tile is never picked on a V100 there.
CATALOG = {
    "fused_moe_int64_offsets": {
        "description": (
            "Cast offs_token to tl.int64 in the Triton fused MoE kernels before it is multiplied by "
            "stride_am, so that token offset * stride cannot overflow int32 (the upstream fix is vLLM "
            "PR #34507; releases with it are recognised as fixed upstream)."
        ),
        "target": FUSED_MOE,
        # Where the pre-fix shape is known; later releases carry the fix (recognised by shape).
        "applies_to": {"vllm": ">=0.6.4", "1cat-vllm": ">=0.0.2"},
        # The file must still compute A's pointers from offs_token and stride_am.
        "file_requires": [r"offs_token\[:,\s*None\]\s*//\s*top_k\s*\*\s*stride_am"],
        # Exactly one site in every function whose body matches this (each such Triton kernel).
        "site_functions": {"name": r"\w+", "body": r"offs_token\[:,\s*None\]\s*//\s*top_k\s*\*\s*stride_am",
                           "what": "kernel that computes A's pointers from offs_token * stride_am"},
        "function_fixed_upstream": None,
        "function_needs": None,
        "anchor": r"^(?P<indent>[ \t]+)token_mask = offs_token < num_valid_tokens[ \t]*$",
        "position": "before",
        # The statement right before each anchor (one logical line, comments dropped) says which shape
        # the site has.
        "window": "previous_statement",
        "site_fixed_upstream": [r"^offs_token = .*\.to\(tl\.int64\)$"],
        "site_unpatched": [r"^offs_token = tl\.(?:load|where)\(.*\)$"],
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
        # The 128 default appears in vLLM 0.17.0; every 1Cat release that has it also has its own SM70
        # branch (fixed upstream), so no 1Cat release is patched.
        "applies_to": {"vllm": ">=0.17.0"},
        "file_requires": [r"def get_default_config\(", r"[\"']BLOCK_SIZE_K[\"']:\s*block_k\b"],
        "site_functions": {"name": r"get_default_config", "body": r"", "what": "default config function"},
        # An upstream get_default_config that already special-cases SM70.
        "function_fixed_upstream": ("get_default_config", [
            r"is_device_capability\(\s*(?:70|\(\s*7\s*,\s*0\s*\))\s*\)",
            r"get_device_capability\(\)\s*==\s*\(\s*7\s*,\s*0\s*\)",
            # 1Cat-vLLM: at least SM70 and not SM75, i.e. exactly Volta
            r"has_device_capability\(\s*70\s*\)\s*and\s+not\s+[\w.]*has_device_capability\(\s*75\s*\)",
        ]),
        # Without a K tile of 128 in get_default_config (vLLM up to 0.16.0) there is nothing to cap.
        "function_needs": ("get_default_config", r"block_k\s*=\s*128\b|[\"']BLOCK_SIZE_K[\"']:\s*128\b",
                           "get_default_config never picks a BLOCK_SIZE_K of 128"),
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

RESULTS_PRESENT = ("patched", "already_patched", "fixed_upstream", "not_needed")
RESULTS_ABSENT = ("removed", "already_absent", "fixed_upstream", "not_needed")


class PatchError(Exception):
    """The file does not have a shape the patch knows, or the request is invalid; nothing was changed."""


def _begin(name):
    return f"# >>> volta.serving: {name}"


def _end(name):
    return f"# <<< volta.serving: {name}"


def check_params(name, params):
    """The parameters of patch *name*, checked. Raises PatchError for a block size Triton cannot use."""
    params = dict(params or {})
    block_k = params.get("block_k", 64)
    if isinstance(block_k, bool) or not isinstance(block_k, int) or block_k < 16 or block_k & (block_k - 1):
        raise PatchError(f"patch {name}: block_k must be a power of two of at least 16 (Triton's tl.arange "
                         f"needs a power of two and tl.dot a K tile of 16 or more), got {block_k!r}; to turn "
                         f"the cap off on one host, set {SM70_BLOCK_K_ENV}=0 in the serving environment")
    params["block_k"] = block_k
    return params


def render_block(name, indent, params):
    patch = CATALOG[name]
    return [line.replace("{indent}", indent).replace("{block_k}", str(params.get("block_k", 64)))
            for line in patch["insert"]]


def _is_statement(line):
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(")
_TOP = re.compile(r"^(?:@|def |async |class )")


def _code(line):
    """*line* without its comment (string literals blanked first, so a '#' inside one is kept out)."""
    return _STRING.sub('""', line).split("#", 1)[0]


def previous_statement(lines, idx):
    """The logical statement that ends above line *idx* (blank and comment lines skipped), on one line.

    A statement closed by a bracket opened lines above (``x = f(`` ... ``)``) is joined from where the
    bracket opened, with comments dropped and whitespace collapsed.
    """
    j = idx - 1
    while j >= 0 and not _is_statement(lines[j]):
        j -= 1
    if j < 0:
        return ""
    parts = [_code(lines[j])]
    depth = sum(parts[0].count(c) for c in ")]}") - sum(parts[0].count(c) for c in "([{")
    while depth > 0 and j > 0:
        j -= 1
        code = _code(lines[j])
        parts.insert(0, code)
        depth += sum(code.count(c) for c in ")]}") - sum(code.count(c) for c in "([{")
    return " ".join(" ".join(parts).split())


def functions(lines):
    """Top-level functions as (name, first index, last index): each ends before the next top-level
    ``def``, ``class`` or decorator."""
    starts = []
    for i, line in enumerate(lines):
        match = _DEF.match(line)
        if match:
            starts.append((i, match.group(1)))
    out = []
    for first, name in starts:
        last = next((j - 1 for j in range(first + 1, len(lines)) if _TOP.match(lines[j])), len(lines) - 1)
        out.append((name, first, last))
    return out


def _function_body(lines, name):
    for fname, first, last in functions(lines):
        if fname == name:
            return "\n".join(lines[first:last + 1])
    return None


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


def _refuse(name, dist, version, where, problem):
    """Raise PatchError for *problem*; a version outside applies_to is named first."""
    allowed, reason = version_allowed(name, dist, version)
    if not allowed:
        raise PatchError(f"{where}: refusing to patch: {reason} (and {problem})")
    raise PatchError(f"{where}: {problem}; not patched")


def _sites(patch, lines):
    anchor = re.compile(patch["anchor"])
    sites = []
    for i, line in enumerate(lines):
        match = anchor.match(line)
        if match:
            sites.append((i, match.group("indent")))
    return sites


def _ours(patch, name, lines, sites, where):
    """Our marked blocks next to the sites: [(site index, indent, (first, last))]."""
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
    return ours


def plan(name, text, state="present", params=None, dist=None, version=None, path="<file>"):
    """Decide what *state* means for *text*. Returns dict(result, changed, text, sites, message).

    Raises PatchError (naming the file, the version and the patch) for an unknown shape, a number of
    patch sites other than the shape's, a version outside the patch's range, or a bad parameter.
    """
    if name not in CATALOG:
        raise PatchError(f"unknown patch {name!r}; known: {', '.join(sorted(CATALOG))}")
    patch = CATALOG[name]
    params = check_params(name, params)
    where = describe(name, dist, version, path)
    lines = text.split("\n")
    sites = _sites(patch, lines)
    ours = _ours(patch, name, lines, sites, where)
    upstream = None if ours else _upstream(patch, lines, sites)
    if upstream:
        result, why = upstream
        return _out(result, False, text, [s[0] + 1 for s in sites], f"{where}: {why}, left alone")
    if state == "absent":
        if not ours:
            return _out("already_absent", False, text, [], f"{where}: not applied")
        drop = set()
        for _idx, _indent, (first, last) in ours:
            drop.update(range(first, last + 1))
        new = "\n".join(line for i, line in enumerate(lines) if i not in drop)
        return _out("removed", True, new, [s[0] + 1 for s in ours], f"{where}: removed from {len(ours)} site(s)")
    return _plan_present(name, patch, text, lines, sites, ours, params, dist, version, where)


def _upstream(patch, lines, sites):
    """("fixed_upstream" | "not_needed", why) when the file needs nothing from this patch, else None."""
    if patch["function_fixed_upstream"]:
        fname, patterns = patch["function_fixed_upstream"]
        body = _function_body(lines, fname)
        if body is not None and any(re.search(rx, body) for rx in patterns):
            return "fixed_upstream", f"fixed upstream ({fname} already special-cases SM70)"
    if sites and patch["window"]:
        if all(_classify(patch, lines, idx) == "fixed_upstream" for idx, _indent in sites):
            lines_at = ", ".join(str(idx + 1) for idx, _indent in sites)
            return "fixed_upstream", f"fixed upstream at line(s) {lines_at}"
    if patch["function_needs"] and not sites:
        fname, pattern, why = patch["function_needs"]
        body = _function_body(lines, fname)
        if body is not None and not re.search(pattern, body):
            return "not_needed", f"not needed ({why})"
    return None


def _check_site_count(name, patch, lines, sites, dist, version, where):
    """Exactly one site in each function the shape says (e.g. every MoE kernel), none elsewhere."""
    rule = patch["site_functions"]
    owners = [(fname, first, last) for fname, first, last in functions(lines)
              if re.fullmatch(rule["name"], fname) and re.search(rule["body"], "\n".join(lines[first:last + 1]))]
    found = {fname: [] for fname, _first, _last in owners}
    outside = []
    for idx, _indent in sites:
        owner = next((f for f in owners if f[1] <= idx <= f[2]), None)
        (found[owner[0]] if owner else outside).append(idx + 1)
    if owners and not outside and all(len(at) == 1 for at in found.values()):
        return
    counts = [f"{len(at)} in {fname}" + (f" (line {', '.join(map(str, at))})" if at else "")
              for fname, at in found.items()]
    if outside:
        counts.append(f"{len(outside)} outside them (line {', '.join(map(str, outside))})")
    names = ", ".join(found) or "none in this file"
    _refuse(name, dist, version, where,
            f"expected one patch site in each {rule['what']} ({names}), found {'; '.join(counts) or 'none'}")


def _plan_present(name, patch, text, lines, sites, ours, params, dist, version, where):
    missing = [rx for rx in patch["file_requires"] if not re.search(rx, text, re.M)]
    if missing or not sites:
        what = f"no line matching {patch['anchor']!r}" if not sites else f"no match for {missing[0]!r}"
        _refuse(name, dist, version, where, f"unrecognised file shape ({what})")
    _check_site_count(name, patch, lines, sites, dist, version, where)
    by_site = {idx: block for idx, _indent, block in ours}
    edits, touched = [], []  # edits: (first, last, lines) replacing lines[first:last + 1]
    for idx, indent in sites:
        want = render_block(name, indent, params)
        if idx in by_site:
            first, last = by_site[idx]
            if lines[first:last + 1] != want:  # another parameter: the block is rewritten
                edits.append((first, last, want))
                touched.append(idx + 1)
            continue
        shape = _classify(patch, lines, idx)
        if shape is None:
            _refuse(name, dist, version, where, f"unrecognised shape at line {idx + 1} "
                    f"({previous_statement(lines, idx)[:160]!r} before {lines[idx].strip()!r})")
        if shape == "unpatched":
            edits.append((idx, idx - 1, want) if patch["position"] == "before" else (idx + 1, idx, want))
            touched.append(idx + 1)
    site_lines = [idx + 1 for idx, _indent in sites]
    if not edits:
        return _out("already_patched", False, text, site_lines, f"{where}: already applied")
    allowed, reason = version_allowed(name, dist, version)
    if not allowed:
        raise PatchError(f"{where}: refusing to patch: {reason}")
    new_lines = list(lines)
    for first, last, want in sorted(edits, key=lambda e: e[0], reverse=True):
        new_lines[first:last + 1] = want
    return _out("patched", True, "\n".join(new_lines), site_lines,
                f"{where}: applied at {len(edits)} of {len(sites)} site(s) (line(s) "
                f"{', '.join(map(str, touched))})" + (f"; {reason}" if reason else ""))


def _classify(patch, lines, idx):
    if patch["window"] is None:
        return "unpatched"
    prev = previous_statement(lines, idx)
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
