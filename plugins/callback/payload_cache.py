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
    for the rest of the run only. This callback keeps each payload a run built in a store on the controller
    when the playbook ends, and puts it into the next run's payload cache when it starts, so that run builds only
    the payloads it lacks. It prints nothing and changes no result.
  - It keeps only the payloads of ansible-core's own modules and of this collection's. The store has one
    directory per digest of the store's format, of ansible-core's version and of the place and content of every
    module and module_utils file of ansible-core and of this collection, and a run reads only the directory of
    its own digest, so a changed source, another ansible-core or another copy of either never gets an old
    payload. Directories of other digests that no run has read for 14 days are removed.
  - ansible-core keeps a payload as a pickle, which runs code when it is read. The store never holds one; each
    payload is a directory with the module's zip (C(payload.zip)) and a JSON manifest (C(manifest.json)) of the
    zip's sha256 and size and of two plain fields; the callback writes ansible-core's form of it only into the
    run's own temporary directory, from data that passed the checks below.
  - The payloads run as root on the managed hosts, so every directory and file of the store that a run reads
    (the store itself, its digest's directory, each payload's directory and files) is opened without following
    symbolic links, through directory descriptors, and must belong to the controller's user, be writable by no
    other user (the callback makes them with mode 0700 and 0600) and be a plain directory or regular file; each
    zip must match its manifest. Anything else refuses the whole store for the run, which goes on building its
    own payloads, with one warning naming the path and the fix (for a payload directory, remove the digest's
    directory). A store that cannot be read or written costs only a warning as well.
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

import base64
import io
import os
import pickle
from pathlib import Path

import ansible
from ansible import constants as C
from ansible.executor import module_common
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ansible_version
from ansible_collections.volta.serving.plugins.plugin_utils import _payload_cache

# ansible-core keeps a run's payloads here (ansible/executor/module_common.py, _find_module_utils).
RUN_CACHE = "ansiballz_cache"
_ANSIBLE = Path(ansible.__file__).resolve().parent
_COLLECTION_PLUGINS = Path(__file__).resolve().parents[1]
SOURCES = (("ansible-core modules", _ANSIBLE / "modules"), ("ansible-core module_utils", _ANSIBLE / "module_utils"),
           ("volta.serving modules", _COLLECTION_PLUGINS / "modules"),
           ("volta.serving module_utils", _COLLECTION_PLUGINS / "module_utils"))
# The only classes an entry of the run's own payload cache may name when this callback reads it.
_RUN_ENTRY_CLASSES = {("ansible.executor.module_common", "_CachedModule"): module_common._CachedModule,
                      ("ansible.executor.module_common", "ModuleMetadataV1"): module_common.ModuleMetadataV1}


class _RunEntryUnpickler(pickle.Unpickler):
    """Reads ansible-core's entries of this run's payload cache, refusing any class but the two they hold."""

    def find_class(self, module, name):
        try:
            return _RUN_ENTRY_CLASSES[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a payload cache entry") from None


def encode(fields, zip_bytes):
    """ansible-core's form of an entry (a pickle of _CachedModule), made here from checked plain data."""
    entry = module_common._CachedModule(
        zip_data=base64.b64encode(zip_bytes),
        metadata=module_common.ModuleMetadataV1(serialization_profile=fields["serialization_profile"]),
        source_mapping=dict(fields["source_mapping"]))
    return pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)


def decode(raw):
    """(fields, zip_bytes) of an entry this run's ansible-core wrote, or None for one of another form."""
    try:
        entry = _RunEntryUnpickler(io.BytesIO(raw)).load()
        if not isinstance(entry, module_common._CachedModule):
            return None
        if not isinstance(entry.metadata, module_common.ModuleMetadataV1):
            return None
        zip_bytes = base64.b64decode(entry.zip_data, validate=True)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return None
    mapping = entry.source_mapping
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        return None
    return {"serialization_profile": entry.metadata.serialization_profile, "source_mapping": mapping}, zip_bytes


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
        try:
            self._key = _payload_cache.source_key(ansible_version, SOURCES)
            put = _payload_cache.restore(root, self._key, os.path.join(C.DEFAULT_LOCAL_TMP, RUN_CACHE), encode)
        except _payload_cache.Refused as refused:
            self._key = None
            self._display.warning(f"volta.serving.payload_cache: not used, {refused}. Fix: {refused.fix}.")
            return
        except OSError as error:
            self._key = None
            self._display.warning(f"volta.serving.payload_cache: not used, cannot read {root}: {error}. "
                                  f"Fix: {_payload_cache.ROOT_FIX}.")
            return
        self._display.vvv(f"volta.serving.payload_cache: {len(put)} module payload(s) from {root}")

    def v2_playbook_on_stats(self, stats):
        if self._key is None:
            return
        root = self.get_option("store_dir")
        try:
            if _payload_cache.source_key(ansible_version, SOURCES) != self._key:
                self._display.vvv("volta.serving.payload_cache: sources changed during the run, nothing kept")
                return
            kept = _payload_cache.store(root, self._key, os.path.join(C.DEFAULT_LOCAL_TMP, RUN_CACHE), decode)
        except _payload_cache.Refused as refused:
            self._display.warning(f"volta.serving.payload_cache: this run's payloads not kept, {refused}. "
                                  f"Fix: {refused.fix}.")
            return
        except OSError as error:
            self._display.warning(f"volta.serving.payload_cache: cannot keep this run's payloads in {root}: {error}")
            return
        self._display.vvv(f"volta.serving.payload_cache: {len(kept)} new module payload(s) kept in {root}")
