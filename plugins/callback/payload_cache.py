# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback volta.serving.payload_cache: module payloads built once, not once per run, no output."""

from __future__ import annotations

DOCUMENTATION = r"""
name: payload_cache
type: aggregate
short_description: Keep the module payloads a run builds for the next run on the same controller
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - Before a module first runs, ansible-core zips it with every module_utils file it imports, which costs the
    controller about a tenth of a second of CPU per module (most of it parsing those files), and keeps the zip
    for the rest of the run only. This callback copies each payload a run built into a store on the controller
    when the playbook ends, and into the next run's payload cache when it starts, so that run builds only
    the payloads it lacks. It prints nothing and changes no result.
  - It keeps only the payloads of ansible-core's own modules and of this collection's. The store has one
    directory per digest of ansible-core's version and of the place and content of every module and module_utils
    file of ansible-core and of this collection, and a run reads only the directory of its own digest, so a
    changed source, another ansible-core or another copy of either never gets an old payload. Directories of
    other digests that no run has read for 14 days are removed.
  - The payloads run on the managed hosts, so the store is used only when it belongs to the controller's user
    and no other user can write to it (it is made with mode 0700); otherwise the run goes on without it, with
    a warning. A store that cannot be read or written costs only a warning as well.
  - In the lab's no-change rerun of C(site.yml) on one host it took the payload builds, about 1.3 seconds of
    the controller's CPU, off every run after the first.
options:
  store_dir:
    description: Where the payloads are kept.
    type: path
    default: ~/.cache/volta-serving/payloads
    env:
      - name: VOLTA_SERVING_PAYLOAD_CACHE
    ini:
      - section: volta_serving_payload_cache
        key: store_dir
requirements:
  - enable it, for example in C(ansible.cfg) (C(callbacks_enabled = volta.serving.payload_cache)); this
    repository's C(ansible.cfg) and the lab's molecule configuration do.
"""

import os
from pathlib import Path

import ansible
from ansible import constants as C
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version
from ansible_collections.volta.serving.plugins.plugin_utils import _payload_cache

# ansible-core keeps a run's payloads here (ansible/executor/module_common.py, _find_module_utils).
RUN_CACHE = "ansiballz_cache"
_ANSIBLE = Path(ansible.__file__).resolve().parent
_COLLECTION_PLUGINS = Path(__file__).resolve().parents[1]
# How to silence the warning of a store that cannot be used.
FIX = ("set VOLTA_SERVING_PAYLOAD_CACHE to a directory of your own, or leave volta.serving.payload_cache out of "
       "callbacks_enabled")
SOURCES = (("ansible-core modules", _ANSIBLE / "modules"), ("ansible-core module_utils", _ANSIBLE / "module_utils"),
           ("volta.serving modules", _COLLECTION_PLUGINS / "modules"),
           ("volta.serving module_utils", _COLLECTION_PLUGINS / "module_utils"))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "volta.serving.payload_cache"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._key = None  # the source key at the playbook's start; None when the store is not used

    def v2_playbook_on_start(self, playbook):
        root = self.get_option("store_dir")
        refused = _payload_cache.usable_store(root)
        if refused:
            self._display.warning(f"volta.serving.payload_cache: not used, {refused}; {FIX}")
            return
        try:
            self._key = _payload_cache.source_key(ansible_version, SOURCES)
            copied = _payload_cache.restore(root, self._key, os.path.join(C.DEFAULT_LOCAL_TMP, RUN_CACHE))
        except OSError as error:
            self._key = None
            self._display.warning(f"volta.serving.payload_cache: not used, cannot read {root}: {error}; {FIX}")
            return
        self._display.vvv(f"volta.serving.payload_cache: {len(copied)} module payload(s) from {root}")

    def v2_playbook_on_stats(self, stats):
        if self._key is None:
            return
        root = self.get_option("store_dir")
        try:
            if _payload_cache.source_key(ansible_version, SOURCES) != self._key:
                self._display.vvv("volta.serving.payload_cache: sources changed during the run, nothing kept")
                return
            copied = _payload_cache.store(root, self._key, os.path.join(C.DEFAULT_LOCAL_TMP, RUN_CACHE))
        except OSError as error:
            self._display.warning(f"volta.serving.payload_cache: cannot keep this run's payloads in {root}: {error}")
            return
        self._display.vvv(f"volta.serving.payload_cache: {len(copied)} new module payload(s) kept in {root}")
