# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters engine_build_plan, engine_wheel_paths, engine_sdist_link, engine_llamacpp_key (role volta.serving.engine)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _engine_build

    return _engine_build


_PLAN_KEYS = ("engine", "version", "torch_version", "torch_cuda", "compute_capability",
              "python", "vcpus", "memory_mb", "job_memory_mb")


def engine_build_plan(spec):
    """The host's engine build: method, arch list, MAX_JOBS and the wheel's cache key."""
    if not isinstance(spec, dict):
        raise AnsibleFilterError(f"engine_build_plan: expected a mapping, got {spec!r}")
    missing = [k for k in _PLAN_KEYS if spec.get(k) in (None, "")]
    if missing:
        raise AnsibleFilterError(f"engine_build_plan: missing {', '.join(missing)}")
    logic = _logic()
    try:
        return logic.build_plan(spec)
    except (logic.BuildPlanError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"engine_build_plan: {exc}") from exc


def engine_wheel_paths(needs, cached_keys=None):
    """Per host of the play: build, copy or none (see plugin_utils/_engine_build.py)."""
    if not isinstance(needs, (list, tuple)):
        raise AnsibleFilterError(f"engine_wheel_paths: expected a list, got {needs!r}")
    return _logic().wheel_paths(list(needs), cached_keys or [])


def engine_sdist_link(html, page_url, project, version):
    """The sdist of project==version on a PEP 503 page: url, sha256, filename."""
    logic = _logic()
    try:
        return logic.sdist_link(html, page_url, project, version)
    except logic.BuildPlanError as exc:
        raise AnsibleFilterError(f"engine_sdist_link: {exc}") from exc


def engine_llamacpp_key(spec):
    """The cache key of a llama.cpp build (see plugin_utils/_engine_build.py)."""
    if not isinstance(spec, dict):
        raise AnsibleFilterError(f"engine_llamacpp_key: expected a mapping, got {spec!r}")
    logic = _logic()
    try:
        return logic.llamacpp_key(spec)
    except logic.BuildPlanError as exc:
        raise AnsibleFilterError(f"engine_llamacpp_key: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "engine_build_plan": engine_build_plan,
            "engine_wheel_paths": engine_wheel_paths,
            "engine_sdist_link": engine_sdist_link,
            "engine_llamacpp_key": engine_llamacpp_key,
        }
