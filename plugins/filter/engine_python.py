# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters volta.serving.engine_python_choice (roles engine and cuda_toolkit): which Python an engine runs on;
engine_python_lines: the line the engine role reports for each choice."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _python

    return _python


def engine_python_choice(request):
    """The interpreter of one engine on this host (plugin_utils/_python.choose), with ``problem``.

    ``problem`` is empty when the choice stands, else the reason it cannot (the other keys are then
    empty): the role asserts on it, naming the host.
    """
    if not isinstance(request, dict):
        raise AnsibleFilterError(f"engine_python_choice: expected a mapping, got {request!r}")
    logic = _logic()
    try:
        return {**logic.choose(dict(request)), "problem": ""}
    except logic.PythonChoiceError as exc:
        return {"source": "", "version": "", "minor": "", "request": "", "name": "", "packages": [],
                "uv_version": "", "requires": "", "why": "", "problem": str(exc)}


def engine_python_lines(pythons, host, python_dir):
    """One line per engine of *pythons* (engine: engine_python_choice result): its Python, its source, why."""
    if not isinstance(pythons, dict):
        raise AnsibleFilterError(f"engine_python_lines: expected a mapping of engines, got {pythons!r}")
    lines = []
    for engine, choice in pythons.items():
        source = ("the distribution's package" if choice.get("source") == "distribution"
                  else f"installed by uv into {python_dir}")
        lines.append(f"{host}: {engine} runs on Python {choice.get('version', '')} ({choice.get('request', '')}, "
                     f"{source}): {choice.get('why', '')}")
    return lines


class FilterModule:
    def filters(self):
        return {"engine_python_choice": engine_python_choice, "engine_python_lines": engine_python_lines}
