# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How an engine is built from source, and which host of a play builds each wheel.

Private to volta.serving (the filters ``engine_build_plan``, ``engine_wheel_paths`` and
``engine_sdist_link`` use it on the controller):

- ``build_plan``: the install method (source on compute capability 7.x by default), the
  ``TORCH_CUDA_ARCH_LIST``, ``MAX_JOBS`` from the CPU count and the available memory, and the key
  of the built wheel (engine, version, torch, CUDA tag, toolkit, arch list, Python, source);
- ``wheel_paths``: per host of a play, ``build`` (the first host in play order that needs a key
  no cache holds), ``copy`` (every other host with that key) or ``none``;
- ``sdist_link``: the sdist of one release on a PEP 503 index page, with the index's sha256;
- ``llamacpp_key``: the cache key of a built ``llama-server`` (ref, source, CUDA or CPU, CUDA
  architectures and toolkit, compiler, OS release, extra CMake arguments); ``wheel_paths`` then
  picks the host that compiles it, as for a vLLM wheel.
"""

from __future__ import annotations

import hashlib
import re

METHODS = ("source", "wheel", "auto")
_CC_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")
_PYTHON_RE = re.compile(r"(?:^|/)python(\d)\.(\d+)$")
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")


class BuildPlanError(ValueError):
    """An input the build plan cannot use; the message says which and how to fix it."""


def install_method(requested, compute_capability):
    """``(method, why)``: ``auto`` means source on compute capability 7.x, the index's wheel elsewhere."""
    if requested not in METHODS:
        raise BuildPlanError(
            f"engine_vllm_install_method is {requested!r}; it must be one of {', '.join(METHODS)}"
        )
    if requested != "auto":
        return requested, f"engine_vllm_install_method is {requested}"
    major, _minor = _capability(compute_capability)
    if major == 7:
        return "source", (
            f"compute capability {compute_capability}: the index's vLLM wheels carry no SM70 code "
            "or need CUDA 13, so vLLM is built for this GPU"
        )
    return "wheel", f"compute capability {compute_capability}: the index's wheel has code for it"


def _capability(value):
    match = _CC_RE.match(str(value))
    if not match:
        raise BuildPlanError(
            f"volta_server.compute_capability is {value!r}; expected major.minor such as 7.0"
        )
    return int(match.group(1)), int(match.group(2))


def arch_list(compute_capability):
    """``TORCH_CUDA_ARCH_LIST`` for the host's GPUs: ``7.0`` for a V100."""
    major, minor = _capability(compute_capability)
    return f"{major}.{minor}"


def python_tag(python):
    """``cp311`` for ``python3.11`` or ``/usr/bin/python3.11``."""
    match = _PYTHON_RE.search(str(python))
    if not match:
        raise BuildPlanError(f"the engine's Python is {python!r}; expected pythonX.Y (python3.12) or its path")
    return f"cp{match.group(1)}{match.group(2)}"


def build_jobs(vcpus, memory_mb, job_memory_mb, requested=0):
    """``(MAX_JOBS, why)``: *requested* when above 0, else min(vCPUs, available memory / memory per job), >= 1.

    nvcc needs several GB per compile job; more jobs than memory allows make the build swap or
    get killed, more jobs than CPUs gain nothing.
    """
    if int(requested) > 0:
        return int(requested), f"engine_vllm_build_jobs is {int(requested)}"
    if int(job_memory_mb) <= 0:
        raise BuildPlanError(f"engine_vllm_build_job_memory_mb is {job_memory_mb}; it must be above 0")
    cpus = max(1, int(vcpus))
    by_memory = int(memory_mb) // int(job_memory_mb)
    jobs = max(1, min(cpus, by_memory))
    return jobs, (
        f"min({cpus} vCPUs, {int(memory_mb)} MB available / {int(job_memory_mb)} MB per job = {by_memory}),"
        " at least 1"
    )


_CUDA_TAG_RE = re.compile(r"^cu(\d+)(\d)$")
_CUDA_RELEASE_RE = re.compile(r"^\d+\.\d+$")


def build_cuda(requested, torch_cuda):
    """``(release, why)``: the CUDA toolkit vLLM is compiled with.

    *requested* when given; else the release of torch's CUDA tag (``cu126`` -> ``12.6``), so that the
    extensions are built by the CUDA torch was built with. It matters on Volta: vLLM 0.20.0 and later
    keep 7.0 in their CMake ``CUDA_SUPPORTED_ARCHS`` only for nvcc older than 12.8, so a build with
    the 12.8 toolkit has no sm_70 code (recorded from the real CMakeLists.txt of 0.19.1, 0.20.0, 0.20.2
    and 0.21.0; tests/real/test_vllm_build_cuda.py reads it).
    """
    if requested not in (None, ""):
        release = str(requested)
        if not _CUDA_RELEASE_RE.match(release):
            raise BuildPlanError(f"engine_vllm_build_cuda_version is {release!r}; expected a release such as 12.6")
        return release, f"engine_vllm_build_cuda_version is {release}"
    match = _CUDA_TAG_RE.match(str(torch_cuda))
    if not match:
        raise BuildPlanError(f"the torch CUDA tag is {torch_cuda!r}; expected cuXYZ such as cu126")
    release = f"{match.group(1)}.{match.group(2)}"
    return release, f"the CUDA of torch's {torch_cuda} build"


def wheel_key(spec):
    """The cache key of a built wheel: one name per engine, version, torch, CUDA, arch list, Python and source."""
    arch = "_".join(a.replace(".", "") for a in str(spec["arch_list"]).replace(",", ";").split(";") if a)
    parts = [
        spec["engine"], str(spec["version"]), "torch" + str(spec["torch_version"]), spec["torch_cuda"],
        "cuda" + str(spec["cuda_version"]), "sm" + arch, python_tag(spec["python"]),
    ]
    source = str(spec.get("source_sha256") or "")
    if source:
        if not _SHA256_RE.match(source):
            raise BuildPlanError(f"engine_vllm_source_sha256 is {source!r}; expected 64 hex digits")
        parts.append("src" + source[:12].lower())
    return "-".join(parts)


def build_plan(spec):
    """Everything about one host's engine build that follows from its settings and facts (see the filter)."""
    method, why = install_method(spec.get("method", "auto"), spec["compute_capability"])
    arch = arch_list(spec["compute_capability"])
    jobs, jobs_why = build_jobs(spec["vcpus"], spec["memory_mb"], spec["job_memory_mb"], spec.get("jobs", 0))
    cuda, cuda_why = build_cuda(spec.get("cuda_version"), spec["torch_cuda"])
    key = wheel_key(dict(spec, arch_list=arch, cuda_version=cuda))
    return {
        "method": method, "why": why, "arch_list": arch, "max_jobs": jobs, "max_jobs_why": jobs_why,
        "key": key, "python_tag": python_tag(spec["python"]), "cuda_version": cuda, "cuda_why": cuda_why,
        "cuda_home": f"/usr/local/cuda-{cuda}",
    }


def wheel_paths(needs, cached_keys=()):
    """Per host: ``{"path": "build"|"copy"|"none", "from": ...}``, in play order.

    *needs* lists one entry per host in play order: ``{"host", "key", "needed"}`` (``needed``: the
    host will install that wheel in this run); a missing entry (``None``) is a host without it.
    A key already in *cached_keys* is copied by every host; otherwise the first host that needs it
    builds it and the others copy the wheel that host built.
    """
    cached = set(cached_keys or ())
    builders = {}
    out = {}
    for entry in needs:
        if not entry:
            continue
        host = entry["host"]
        if not entry.get("needed"):
            out[host] = {"path": "none", "key": entry.get("key"), "from": None}
        elif entry["key"] in cached:
            out[host] = {"path": "copy", "key": entry["key"], "from": "cache"}
        elif entry["key"] in builders:
            out[host] = {"path": "copy", "key": entry["key"], "from": builders[entry["key"]]}
        else:
            builders[entry["key"]] = host
            out[host] = {"path": "build", "key": entry["key"], "from": None}
    return out


def sdist_link(html, page_url, project, version):
    """``{"url", "sha256", "filename"}`` of ``<project>-<version>.tar.gz`` on a PEP 503 project page.

    The page is read by the collection's index reader (``_index``, what ``dist_metadata`` uses),
    imported here: the build plan's filter is loaded by every task worker that reads the plan, and
    only the sdist lookup needs the index reader.
    """
    from ansible_collections.volta.serving.plugins.module_utils import _index

    files = _index.parse_project_page(html or "", page_url)
    _wheels, sdists = _index.release_files(files, project, version)
    tarballs = [f for f in sdists if f["filename"].endswith(".tar.gz")]
    if not tarballs:
        raise BuildPlanError(
            f"{page_url} lists no source distribution {project}-{version}.tar.gz ({len(files)} files listed)"
        )
    found = tarballs[0]
    return {"url": found["url"], "sha256": (found["sha256"] or "").lower(), "filename": found["filename"]}


_KEY_PART_RE = re.compile(r"[^A-Za-z0-9._]+")


def _key_part(value, what):
    """*value* as one dash-free piece of a cache key (``Ubuntu 24.04`` -> ``ubuntu24.04``)."""
    part = _KEY_PART_RE.sub("", str(value or "")).lower()
    if not part:
        raise BuildPlanError(f"the llama.cpp build key has no {what}; got {value!r}")
    return part


def llamacpp_key(spec):
    """The cache key of one llama.cpp build: the same key means the same ``llama-server`` binary.

    *spec*: ``ref``, ``source_sha256`` (64 hex), ``cuda`` (bool), ``cuda_architectures`` and
    ``cuda_version`` (used with CUDA only), ``compiler`` (the C++ compiler's version), ``os`` (the
    distribution and its release) and ``cmake_args`` (the extra CMake arguments, in order).
    """
    source = str(spec.get("source_sha256") or "")
    if not _SHA256_RE.match(source):
        raise BuildPlanError(f"engine_llamacpp_source_sha256 is {source!r}; expected 64 hex digits")
    if spec.get("cuda"):
        arch = "_".join(a for a in re.split(r"[;, ]+", str(spec.get("cuda_architectures") or "")) if a)
        target = f"cuda{_key_part(spec.get('cuda_version'), 'CUDA toolkit')}-sm{_key_part(arch, 'CUDA architecture')}"
    else:
        target = "cpu"
    args = [str(a) for a in spec.get("cmake_args") or []]
    parts = [
        "llamacpp", _key_part(spec.get("ref"), "ref"), "src" + source[:12].lower(), target,
        "cxx" + _key_part(spec.get("compiler"), "compiler version"), _key_part(spec.get("os"), "OS release"),
    ]
    if args:
        parts.append("args" + hashlib.sha256("\0".join(args).encode()).hexdigest()[:8])
    return "-".join(parts)
