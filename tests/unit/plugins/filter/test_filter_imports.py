"""What loading a filter plugin costs each task worker: no module_utils or plugin_utils until a filter is called.

Every task worker that evaluates one of the collection's filters loads every filter file of the
collection again (Ansible's filter loader walks them all; the workers are forked before the first
use). ansible.module_utils.urls (ssl, http.client, cryptography), while it came with
engine_build_plan and model_plan, was 14% of the controller's sampled CPU in the 8-host rerun
(docs/dev/internals.md, One read per role); the filters' own module_utils were most of the rest of the
filter loading (fifth step).
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


def test_ansible_loads_every_filter_without_its_helpers():
    # Through Ansible's own loader, as a task worker does: the first volta filter looked up loads
    # every filter file of the collection, and none of them may pull in a module_utils or plugin_utils file.
    code = (f"import sys\nfrom ansible.plugins.loader import init_plugin_loader, filter_loader\n"
            f"init_plugin_loader([{str(COLLECTIONS)!r}])\n"
            "filter_loader.get('volta.serving.systemd_exec')\n"
            "files = sorted(m.rsplit('.', 1)[1] for m in sys.modules if '.volta.serving.plugins.filter.' in m)\n"
            "ours = ('.volta.serving.plugins.module_utils.', '.volta.serving.plugins.plugin_utils.')\n"
            "utils = sorted(m.rsplit('.', 1)[1] for m in sys.modules if any(p in m for p in ours))\n"
            "print(' '.join(files)); print(' '.join(utils) or '-')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    files, utils = out.stdout.splitlines()[-2:]
    on_disk = sorted(p.stem for p in (COLLECTIONS / "ansible_collections/volta/serving/plugins/filter").glob("*.py"))
    assert files.split() == on_disk
    assert utils == "-"


@pytest.mark.parametrize(("plugin", "filter_name", "args", "helper"), [
    ("cidr_split", "cidr_split", "(['10.0.0.0/8'])", "plugin_utils._cidr"),
    ("model_plan", "model_switch_back", "([{'name': 'a', 'model': 'x'}], 'a', 'y')", "module_utils._model"),
    ("engine_build", "engine_wheel_paths", "([])", "plugin_utils._engine_build"),
])
def test_a_filter_loads_its_helper_when_called(plugin, filter_name, args, helper):
    lines = _loaded_after(
        f"from ansible_collections.volta.serving.plugins.filter import {plugin} as p\n"
        f"name = 'ansible_collections.volta.serving.plugins.{helper}'\n"
        f"before = name in sys.modules\n"
        f"p.FilterModule().filters()[{filter_name!r}]{args}\n"
        f"print(before, name in sys.modules)")
    assert lines[0] == "False True"
