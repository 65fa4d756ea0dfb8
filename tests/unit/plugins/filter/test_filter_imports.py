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


def _loaded_after(statements):
    """The HEAVY modules loaded in a fresh interpreter after the collection is on the path and statements ran."""
    code = (f"import sys; sys.path.insert(0, {str(COLLECTIONS)!r})\n{statements}\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


@pytest.mark.parametrize("plugin", ["engine_build", "model_plan"])
def test_filter_loads_without_the_url_library(plugin):
    assert _loaded_after(f"import ansible_collections.volta.serving.plugins.filter.{plugin}") == [""]


MODULE_UTILS = "from ansible_collections.volta.serving.plugins.module_utils import "


def test_the_readers_load_without_the_url_library():
    # engine_sdist_link reads a page through _index without opening a URL.
    assert _loaded_after(f"{MODULE_UTILS}_index, _model_hub") == [""]


def test_the_hub_reader_loads_the_url_library_when_made():
    assert _loaded_after(f"{MODULE_UTILS}_model_hub\n_model_hub.urllib_reader()") == [" ".join(HEAVY)]


def test_the_index_reader_opens_urls_with_ansible():
    lines = _loaded_after(f"{MODULE_UTILS}_index\n"
                          "try:\n    _index._open('file:///nonexistent/volta', 1)\n"
                          "except _index.MetadataError as exc:\n    print('error:', exc)")
    assert lines[0].startswith("error: file:///nonexistent/volta: cannot read")
    assert lines[1:] == [" ".join(HEAVY)]
