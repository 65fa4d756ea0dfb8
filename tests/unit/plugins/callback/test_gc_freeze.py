# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for plugins/callback/gc_freeze.py."""

from __future__ import annotations

import gc
import weakref

from ansible_collections.volta.serving.plugins.callback import gc_freeze


class Node:
    me = None


def test_play_start_freezes_what_the_controller_holds_and_collects_first():
    gc.unfreeze()
    held = [Node() for count in range(10)]
    garbage = Node()
    garbage.me = garbage  # a cycle nothing refers to: collected before the freeze, never frozen
    gone = weakref.ref(garbage)
    del garbage
    try:
        gc_freeze.CallbackModule().v2_playbook_on_play_start(None)
        assert gone() is None
        assert gc.get_freeze_count() > len(held)
    finally:
        gc.unfreeze()


def test_enabled_by_name_only_and_prints_nothing():
    plugin = gc_freeze.CallbackModule
    assert plugin.CALLBACK_NEEDS_ENABLED is True
    assert plugin.CALLBACK_TYPE == "aggregate"
    assert not [name for name in vars(plugin) if name.startswith("v2_") and name != "v2_playbook_on_play_start"]
