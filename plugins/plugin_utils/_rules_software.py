# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host's software rules on SM70: the driver branch and kernel module, the CUDA toolkit, the engines'
torch builds, the build headers, and the platform (glibc, the engines' Python).

Pure Python, no Ansible imports. One layer of the serving rules; the registry (``_rules``) assembles every
layer's CATALOGUE. Platform rules (glibc, Python): data in plugin_utils/_python.py. ctx["platform"] is None
when the caller passed no host platform (no such check), else {distribution, version, glibc, note}; glibc is
None when it was not read (note says why).
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.module_utils._torch_sm70 import (
    FIRST_CUDA_WITHOUT_SM70,
    TORCH_SM70_SOURCE,
    parse_cuda_tag,
    parse_version,
    sm70_cuda_tags,
    torch_keeps_sm70,
)
from ansible_collections.volta.serving.plugins.plugin_utils import _python
from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._sm70 import (
    LAST_VOLTA_DRIVER_BRANCH,
    SM70_BELOW,
    VLLM_ENGINES,
    below,
)

# id: (severity, overridable, what it is about); the registry (_rules.RULES) assembles every layer's.
CATALOGUE = {
    "driver-branch-above-580": (ERROR, False, "an NVIDIA driver branch newer than 580 on SM70"),
    "driver-open-modules": (ERROR, False, "the open NVIDIA kernel modules on SM70"),
    "cuda-13-on-sm70": (ERROR, False, "CUDA toolkit 13 or newer on SM70"),
    "torch-without-sm70": (ERROR, False, "a torch build without sm_70 kernels"),
    "torch-sm70-unknown": (WARNING, False, "a torch build not known to have (or lack) sm_70 kernels"),
    "python-headers": (ERROR, False, "engine build packages without Python headers (Triton JIT)"),
    "glibc-too-old": (ERROR, False, "an engine on a host whose glibc is older than its compiled code needs"),
    "python-unsupported": (ERROR, False, "an engine interpreter outside the engine's Requires-Python"),
    "platform-unchecked": (WARNING, False, "a platform requirement not checked (the host was not read)"),
}


def check_software(instances, ctx):
    """Host-wide software rules on SM70: driver, CUDA toolkit, the engines' torch builds, headers."""
    if not below(ctx["cc"], SM70_BELOW):
        return []
    return (
        _check_driver(ctx)
        + _check_cuda_toolkit(ctx)
        + [item for engine in _vllm_engines(instances) for item in _check_torch_build(engine, ctx)]
        + _check_build_packages(instances, ctx)
    )


def _vllm_engines(instances):
    return sorted({inst["engine"] for inst in instances if inst["engine"] in VLLM_ENGINES})


def _check_driver(ctx):
    host, out = ctx["host"], []
    branch = parse_version(ctx["driver_branch"])
    if branch is None:
        out.append(
            finding(
                "invalid-value",
                host,
                None,
                "nvidia_driver_branch",
                f"nvidia_driver_branch {ctx['driver_branch']!r} is not a version.",
                "the rules compare it with 580, the last branch for Volta.",
                'set nvidia_driver_branch: "580".',
            )
        )
    elif branch[0] > LAST_VOLTA_DRIVER_BRANCH:
        out.append(
            finding(
                "driver-branch-above-580",
                host,
                None,
                "nvidia_driver_branch",
                f"driver branch {ctx['driver_branch']} on compute capability {ctx['cc_text']}.",
                "580 is the last driver branch that supports Volta; newer drivers find no usable GPU.",
                'set nvidia_driver_branch: "580".',
            )
        )
    return out + _check_kernel_module(ctx)


def _check_kernel_module(ctx):
    host, module = ctx["host"], str(ctx["driver_kernel_module"])
    if module == "open":
        return [
            finding(
                "driver-open-modules",
                host,
                None,
                "nvidia_driver_kernel_module",
                f"the open kernel modules on compute capability {ctx['cc_text']}.",
                "the open NVIDIA kernel modules support Turing and newer only.",
                "set nvidia_driver_kernel_module: proprietary.",
            )
        ]
    if module != "proprietary":
        return [
            finding(
                "unknown-value",
                host,
                None,
                "nvidia_driver_kernel_module",
                f"nvidia_driver_kernel_module {ctx['driver_kernel_module']!r} is neither proprietary nor open.",
                "the driver role installs one of the two.",
                "set nvidia_driver_kernel_module: proprietary.",
            )
        ]
    return []


def _check_cuda_toolkit(ctx):
    host = ctx["host"]
    cuda = parse_version(ctx["cuda_version"])
    if cuda is None:
        return [
            finding(
                "invalid-value",
                host,
                None,
                "cuda_toolkit_version",
                f"cuda_toolkit_version {ctx['cuda_version']!r} is not a version.",
                "the rules compare it with 13, the first CUDA without SM70.",
                'set cuda_toolkit_version: "12.8".',
            )
        ]
    if cuda[0] >= FIRST_CUDA_WITHOUT_SM70:
        return [
            finding(
                "cuda-13-on-sm70",
                host,
                None,
                "cuda_toolkit_version",
                f"CUDA {ctx['cuda_version']} on compute capability {ctx['cc_text']}.",
                "CUDA 13 removed offline compilation for SM70 (nvcc fatal: Unsupported gpu architecture "
                "'compute_70'); Triton, llama.cpp and the patches need it.",
                'set cuda_toolkit_version: "12.8".',
            )
        ]
    return []


def _sm70_alternatives(engine, torch):
    tags = sm70_cuda_tags(torch)
    if tags:
        return f"use a build of torch {torch} that keeps sm_70 (engine_{engine}_torch_cuda: {' or '.join(tags)})"
    return f"use the cu126 build (engine_{engine}_torch_cuda: cu126), which keeps Volta through 2.14"


def _check_torch_build(engine, ctx):
    host = ctx["host"]
    versions = ctx["engine_versions"].get(engine, {})
    torch, tag = versions.get("torch_version"), versions.get("torch_cuda")
    torch_v, cuda_tag = parse_version(torch), parse_cuda_tag(tag)
    if torch_v is None or cuda_tag is None:
        return [
            finding(
                "invalid-value",
                host,
                None,
                f"engine_{engine}_torch_cuda" if cuda_tag is None else f"engine_{engine}_torch_version",
                f"torch {torch!r} / CUDA tag {tag!r} for {engine} cannot be read.",
                "the rules need both to know whether the wheel has sm_70 kernels.",
                f"set engine_{engine}_torch_version (e.g. 2.11.0) and engine_{engine}_torch_cuda (e.g. cu126).",
            )
        ]
    keeps = torch_keeps_sm70(torch, tag)
    if keeps is False:
        return [
            finding(
                "torch-without-sm70",
                host,
                None,
                f"engine_{engine}_torch_cuda",
                f"torch {torch}+{tag} for {engine} has no sm_70 kernels.",
                f"PyTorch builds its torch {torch_v[0]}.{torch_v[1]} {tag} wheels without Volta (arch list starts "
                f"at sm_75; recorded from {TORCH_SM70_SOURCE}); CUDA kernels fail with "
                "'no kernel image is available'.",
                f"{_sm70_alternatives(engine, torch)}, or torch 2.10 with cu128 (1Cat-vLLM).",
            )
        ]
    if keeps is None:
        return [
            finding(
                "torch-sm70-unknown",
                host,
                None,
                f"engine_{engine}_torch_cuda",
                f"whether torch {torch}+{tag} for {engine} has sm_70 kernels is not known; "
                "the binary audit after install decides.",
                f"volta.serving records which torch builds keep sm_70 from {TORCH_SM70_SOURCE}, "
                f"and torch {torch_v[0]}.{torch_v[1]} {tag} is not among them.",
                f"{_sm70_alternatives(engine, torch)}; or keep it and let the smoke test's arch check and "
                "binary audit refuse the install if sm_70 is missing.",
            )
        ]
    return []


def _check_build_packages(instances, ctx):
    packages = ctx["build_packages"]
    if packages is None or not instances:
        return []
    if any(re.match(r"^python3(\.\d+)?-dev$", str(p)) for p in packages):
        return []
    return [
        finding(
            "python-headers",
            ctx["host"],
            None,
            "engine_build_packages",
            f"engine_build_packages {list(packages)} has no python3.X-dev package.",
            "Triton JIT-compiles a helper on first start and fails with 'Python.h: No such file "
            "or directory' without the headers.",
            "add the -dev package of the engine's Python (Debian 12: python3.11-dev, Ubuntu 22.04: python3.10-dev, "
            "Ubuntu 24.04: python3.12-dev), build-essential and ninja-build.",
        )
    ]


# The variable that names each engine's interpreter.
PYTHON_VARIABLES = {"vllm": "engine_python", "onecat": "engine_onecat_python"}


def check_platform(instances, ctx):
    """The engines' glibc floors and interpreters on this host's platform."""
    engines = _vllm_engines(instances)
    out = []
    for engine in engines:
        out += _check_glibc(engine, [i for i in instances if i["engine"] == engine], ctx)
        out += _check_python(engine, ctx)
    return out


def _check_glibc(engine, instances, ctx):
    need, platform = _python.ENGINE_GLIBC.get(engine), ctx.get("platform")
    if need is None or platform is None:
        return []
    host, found = ctx["host"], _python.parse_glibc(platform.get("glibc"))
    os_text = _python.platform_text(platform.get("distribution"), platform.get("version"))
    if found is None:
        return [finding(
            "platform-unchecked", host, inst["name"], "engine",
            f"{_python.ENGINE_NAMES[engine]} needs glibc >= {need['min']}; the glibc of this host was not "
            f"checked ({platform.get('note') or 'unreadable: ' + repr(platform.get('glibc'))}).",
            need["why"] + ".",
            "run preflight against the host (volta_preflight_detect=true), or check `getconf GNU_LIBC_VERSION` "
            f"on it yourself: {need['fix']} where it is older.",
        ) for inst in instances]
    if not _python.glibc_below(found, need["min"]):
        return []
    return [finding(
        "glibc-too-old", host, inst["name"], "engine",
        f"{_python.ENGINE_NAMES[engine]} needs glibc >= {need['min']}, but {os_text} has glibc {found}.",
        need["why"] + ".",
        need["fix"] + ".",
    ) for inst in instances]


def _check_python(engine, ctx):
    versions = ctx["engine_versions"].get(engine, {})
    platform = ctx.get("platform") or {}
    variable = PYTHON_VARIABLES[engine]
    explicit = (ctx.get("engine_pythons") or {}).get(engine) or ""
    if not explicit and not platform:
        return []  # auto needs the platform; without it the engine role decides on the host
    try:
        _python.choose({
            "distribution": platform.get("distribution"), "version": platform.get("version"), "engine": engine,
            "engine_version": versions.get("version"), "torch_version": versions.get("torch_version"),
            "wheel": ctx.get("onecat_wheel"), "explicit": explicit, "variable": variable,
            "uv_version": ctx.get("uv_python") or _python.DEFAULT_UV_PYTHON,
        })
    except _python.PythonChoiceError as exc:
        text, _sep, fix = str(exc).partition(" Fix: ")
        return [finding(
            "python-unsupported", ctx["host"], None, variable, text.rstrip(".") + ".",
            "the engine and its torch publish no build for that Python (Requires-Python), so the install fails "
            "or the engine does not import.",
            (fix or "correct the interpreter").rstrip(".") + ".",
        )]
    return []
