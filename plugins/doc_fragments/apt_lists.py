# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of the modules that refresh apt's package lists (apt_lists, package_state)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  sources_changed:
    description: The caller changed an apt source, keyring or preferences file in this run.
    type: bool
    default: false
  cache_valid_time:
    description: Refresh lists older than this many seconds, even when nothing else calls for it.
    type: int
    default: 3600
  lock_timeout:
    description: Seconds to wait for another apt or dpkg that holds the lists lock.
    type: int
    default: 600
"""
