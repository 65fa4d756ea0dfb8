# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of volta.serving.preflight's report (logic and unit tests: plugins/plugin_utils/_preflight_report.py):
preflight_gpu_text, preflight_platform_text, preflight_platform_note and preflight_skipped_text."""

from __future__ import annotations


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _preflight_report

    return _preflight_report


def _plain(value):
    return dict(value) if hasattr(value, "keys") else value


def preflight_gpu_text(gpu):
    """The GPUs read, or why not (see _preflight_report.gpu_text)."""
    return _logic().gpu_text(_plain(gpu))


def preflight_platform_text(platform):
    """The distribution and glibc (see _preflight_report.platform_text)."""
    return _logic().platform_text(_plain(platform))


def preflight_platform_note(glibc, detect, command):
    """Why glibc was not read (see _preflight_report.platform_note)."""
    return _logic().platform_note(_plain(glibc), bool(detect), list(command or []))


def preflight_skipped_text(skipped):
    """The rules that did not run (see _preflight_report.skipped_text)."""
    return _logic().skipped_text(skipped)


class FilterModule:
    def filters(self):
        return {"preflight_gpu_text": preflight_gpu_text, "preflight_platform_text": preflight_platform_text,
                "preflight_platform_note": preflight_platform_note, "preflight_skipped_text": preflight_skipped_text}
