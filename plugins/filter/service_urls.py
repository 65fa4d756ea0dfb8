# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the roles model and exporters (logic and unit tests: plugins/plugin_utils/_service_urls.py):
python_index_url (the role's index, else the serving plan's shared one), python_index_args (pip's index
arguments), url_host (an address for a URL or a listen address) and loopback_address."""

from __future__ import annotations


# Imported on call, not at load: Ansible loads every filter file of the collection in each task
# worker that uses any one of them (docs/dev/internals.md, Where a change goes).
def _logic():
    from ansible_collections.volta.serving.plugins.plugin_utils import _service_urls

    return _service_urls


def python_index_url(own, serving_plan=None):
    """The role's index, else the plan's shared python_index_url, else PyPI (see _service_urls.index_url)."""
    return _logic().index_url(own, dict(serving_plan) if hasattr(serving_plan, "keys") else None)


def python_index_args(url, extra=None):
    """pip's index arguments around *extra* (see _service_urls.index_args)."""
    return _logic().index_args(url, list(extra or []))


def url_host(address, asked=False):
    """*address* for a URL (see _service_urls.url_host)."""
    return _logic().url_host(address, bool(asked))


def loopback_address(address):
    """Whether *address* is a loopback listen address (see _service_urls.is_loopback)."""
    return _logic().is_loopback(address)


class FilterModule:
    def filters(self):
        return {"python_index_url": python_index_url, "python_index_args": python_index_args,
                "url_host": url_host, "loopback_address": loopback_address}
