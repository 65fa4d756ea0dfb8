# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt and dpkg on the host, for volta.serving.apt_lists, package_state and engine_installs.

Runs ``apt-cache``, ``apt-get update`` and ``dpkg-query`` through an AnsibleModule passed in (the
only Ansible object used here); what their output means is decided in ``_apt.py`` and
``_driver_packages.py``. Private to the collection.
"""

from __future__ import annotations

import os
import time

from ansible_collections.volta.serving.plugins.module_utils import _apt

ENVIRON = {"LC_ALL": "C", "DEBIAN_FRONTEND": "noninteractive"}
DPKG_FORMAT = "${Package} ${Version} ${db:Status-Want} ${db:Status-Status} ${source:Package}\n"


def policy(module, names):
    """``apt-cache policy NAMES`` -> :func:`_apt.parse_policy` ({} for no names)."""
    if not names:
        return {}
    apt_cache = module.get_bin_path("apt-cache", required=True)
    rc, out, err = module.run_command([apt_cache, "policy", *names], environ_update=ENVIRON)
    if rc != 0:
        module.fail_json(msg=f"apt-cache policy failed (rc={rc}): {(err or out).strip()[-1000:]}. "
                         "Fix: run apt-cache policy on the host and repair what it reports.")
    return _apt.parse_policy(out)


def repositories(module):
    """The repositories of apt's package lists, as ``apt-cache policy`` names them."""
    apt_cache = module.get_bin_path("apt-cache", required=True)
    rc, out, _err = module.run_command([apt_cache, "policy"], environ_update=ENVIRON)
    return _apt.parse_package_files(out) if rc == 0 else []


def dpkg_rows(module):
    """Every package dpkg knows, one "name version want status source" row each."""
    dpkg_query = module.get_bin_path("dpkg-query", required=True)
    rc, out, err = module.run_command([dpkg_query, "-W", "-f=" + DPKG_FORMAT], environ_update=ENVIRON)
    if rc != 0:
        module.fail_json(msg=f"dpkg-query -W failed (rc={rc}): {(err or out).strip()[-1000:]}. "
                         "Fix: run dpkg --audit on the host and repair what it reports.")
    return out.splitlines()


def update(module, lock_timeout):
    """apt-get update, retried while another apt holds a lock. Returns (seconds waited, holder)."""
    apt_get = module.get_bin_path("apt-get", required=True)
    argv = [apt_get, "-q", "-o", f"DPkg::Lock::Timeout={lock_timeout}", "update"]
    start, holder = time.monotonic(), None
    while True:
        rc, out, err = module.run_command(argv, environ_update=ENVIRON)
        if rc == 0:
            break
        waited = time.monotonic() - start
        if not _apt.is_lock_error(err + out) or waited >= lock_timeout:
            errors = [line for line in (err + out).splitlines() if line.startswith(("E:", "W:"))]
            why = "another apt or dpkg held its lock for longer than lock_timeout" if _apt.is_lock_error(err + out) \
                else "a repository of the apt sources could not be read"
            module.fail_json(msg=f"apt-get update failed (rc={rc}): {' '.join(errors[-3:]) or err.strip()[-500:]}. "
                             f"Why: {why}. Fix: run apt-get update on the host and repair what it reports.")
        holder = _apt.lock_holder(_apt.LOCKS) or holder
        time.sleep(2)
    for line in (err + out).splitlines():
        if line.startswith("W:"):
            module.warn(f"apt-get update: {line[2:].strip()}")
    touch(_apt.STAMP)
    return int(time.monotonic() - start), holder


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8"):
        pass
    os.utime(path)


def read_lists(module, names, need, sources_changed=False, cache_valid_time=3600, lock_timeout=600, refresh=True):
    """Read *names* from the lists, refreshing them first when they cannot know *need* (see _apt).

    Refreshes nothing in check mode or with refresh false (the reasons are still returned).
    Returns {refreshed, reasons, packages, missing, repositories, lock_waited}.
    """
    packages = policy(module, names)
    reasons = _apt.refresh_reasons(
        sources_changed=sources_changed,
        newest=_apt.newest_source(_apt.source_files(_apt.ETC_APT)),
        lists_at=_apt.lists_time(_apt.LISTS_DIR, _apt.STAMP),
        now=time.time(),
        cache_valid_time=cache_valid_time,
        unknown=[n for n in need if not (packages.get(n) or {}).get("candidate")],
    )
    refreshed, waited = False, 0
    if reasons and refresh and not module.check_mode:
        waited, holder = update(module, lock_timeout)
        if holder:
            module.warn(f"waited {waited} s for another apt/dpkg to finish (process {holder})")
        refreshed = True
        packages = policy(module, names)
    return dict(
        refreshed=refreshed, reasons=reasons, packages=packages, lock_waited=waited,
        missing=[n for n in need if not (packages.get(n) or {}).get("candidate")],
        repositories=repositories(module),
    )
