"""What loading a filter plugin costs each task worker: no URL library until a URL is opened.

Every task worker that evaluates a filter loads the filter's file and its module_utils again (the
workers are forked before the first use). engine_build_plan and model_plan are read by many tasks
per host, and ansible.module_utils.urls (ssl, http.client, cryptography), while it came with them,
was 14% of the controller's sampled CPU in the 8-host rerun (README, Benchmarks: fourth step).
"""

import subprocess
import sys
from pathlib import Path

import pytest

COLLECTIONS = Path(__file__).resolve().parents[4] / "collections"
HEAVY = ("ansible.module_utils.urls", "http.client", "ssl")


def _loaded_after_import(module):
    code = (f"import sys; sys.path.insert(0, {str(COLLECTIONS)!r}); import {module}; "
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("plugin", ["engine_build", "model_plan"])
def test_filter_loads_without_the_url_library(plugin):
    assert _loaded_after_import(f"ansible_collections.volta.serving.plugins.filter.{plugin}") == []


def test_the_readers_still_open_urls_with_ansible():
    # The import moved into the functions that open a URL; calling them loads it.
    code = (f"import sys; sys.path.insert(0, {str(COLLECTIONS)!r}); "
            "from ansible_collections.volta.serving.plugins.module_utils import _index, _model_hub; "
            "_model_hub.urllib_reader()\n"
            "try:\n    _index._open('file:///nonexistent/volta', 1)\nexcept _index.MetadataError as exc:\n"
            "    print('error:', exc)\n"
            "print('urls' if 'ansible.module_utils.urls' in sys.modules else 'no urls')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "error: file:///nonexistent/volta: cannot read" in out
    assert out.strip().endswith("urls") and "no urls" not in out
