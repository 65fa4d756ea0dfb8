# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter volta.serving.engine_python_choice (roles engine and cuda_toolkit): which Python an engine runs on."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/architecture.md, One read per role).
def _logic():
    from ansible_collections.volta.serving.plugins.module_utils import _python

    return _python


def engine_python_choice(request):
    """The interpreter of one engine on this host (module_utils/_python.choose), with ``problem``.

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


class FilterModule:
    def filters(self):
        return {"engine_python_choice": engine_python_choice}
