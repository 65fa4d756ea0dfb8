# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a role's own service and its Python packages are reached (roles model and exporters), on the controller.

Pure Python, no Ansible imports. Served by the filters of plugins/filter/service_urls.py:

- ``index_url``: a role's own Python index setting, else the serving plan's ``shared.python_index_url`` (the
  one home of the index every layer installs from), else PyPI;
- ``index_args``: pip's arguments for an index (``--index-url``, and ``--trusted-host`` for plain HTTP);
- ``url_host``: an address as written in a URL or a listen address (IPv6 in brackets), a wildcard turned into
  the loopback address of its family when the host itself asks.
"""

from __future__ import annotations

from urllib.parse import urlsplit

PYPI = "https://pypi.org/simple"
# Wildcard listen addresses and the loopback address a client on the host asks instead.
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}  # noqa: S104  names the wildcard, binds nothing
LOOPBACK_NAMES = ("::1", "[::1]", "localhost")


def index_url(own, serving_plan=None):
    """*own* when set (the role's *_pypi_index_url), else the plan's shared python_index_url, else PyPI.

    *serving_plan* is what the serving_plan action returned (or skipped, or none).
    """
    if own:
        return str(own)
    shared = ((serving_plan or {}).get("plan") or {}).get("shared") or {}
    return str(shared.get("python_index_url") or PYPI)


def index_args(url, extra=()):
    """pip's arguments for *url*: ``--index-url URL``, then *extra*, then ``--trusted-host HOST`` for http://."""
    parts = urlsplit(str(url))
    trusted = ["--trusted-host", parts.hostname] if parts.scheme == "http" and parts.hostname else []
    return ["--index-url", str(url), *extra, *trusted]


def url_host(address, asked=False):
    """*address* as the host part of a URL or listen address: an IPv6 address in brackets.

    *asked*: the address a client on the host asks, a wildcard (0.0.0.0, ::) turned into loopback.
    """
    address = str(address)
    if asked and address in WILDCARDS:
        return WILDCARDS[address]
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def is_loopback(address):
    """True for a loopback listen address (127.0.0.0/8, ::1, localhost)."""
    address = str(address)
    return address in LOOPBACK_NAMES or address.startswith("127.")
