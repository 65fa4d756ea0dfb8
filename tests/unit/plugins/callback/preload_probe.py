"""Run by test_gc_freeze.py in a fresh interpreter: which plugin files the callback loads, play start and tasks.

argv: the collections directory, then the task actions to start, on a host whose inventory group names the
community.docker.docker connection. Prints JSON: the files that play start
loaded and those that the tasks' starts loaded after it, each relative to its package root where it has one.
"""

import json
import os
import sys
import types

sys.path.insert(0, sys.argv[1])

from ansible import constants as C
from ansible.plugins.loader import init_plugin_loader

# this checkout's collection, then where make setup installs the others (community.docker among them)
init_plugin_loader([sys.argv[1], *C.COLLECTIONS_PATHS])

from ansible_collections.volta.serving.plugins.callback import gc_freeze  # noqa: E402


def loaded():
    roots = sorted({os.path.dirname(os.path.dirname(sys.modules["ansible"].__file__)), sys.argv[1],
                    *C.COLLECTIONS_PATHS}, key=len)
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        for root in roots[::-1]:
            if path.startswith(root + os.sep):
                found.add(os.path.relpath(path, root))
                break
    return found


before = loaded()
callback = gc_freeze.CallbackModule()
callback.v2_playbook_on_play_start(None)
play = loaded() - before
lab = types.SimpleNamespace(get_vars=lambda: {"ansible_connection": "community.docker.docker"})
host = types.SimpleNamespace(name="lab-01", get_vars=dict, get_groups=lambda: [lab])
for action in sys.argv[2:]:
    callback.v2_runner_on_start(host, types.SimpleNamespace(action=action, collections=[]))
print(json.dumps({"play": sorted(play), "tasks": sorted(loaded() - before - play)}))
