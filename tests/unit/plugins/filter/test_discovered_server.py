# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volta.serving.discovered_server filter: registered, and the block of _discover for its arguments."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import discovered_server as plugin
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import empty_facts


def test_the_filter_is_registered():
    assert plugin.FilterModule().filters() == {"discovered_server": plugin.discovered_server}


@pytest.mark.parametrize(("meminfo", "pci", "ram", "count"), [
    ("MemTotal:       131072000 kB\n", 4, 125, 4),
    (None, None, None, None),
])
def test_the_filter_passes_its_arguments(meminfo, pci, ram, count):
    out = plugin.discovered_server(empty_facts("no_driver", "nvidia-smi was not found"), "gpu01",
                                   meminfo=meminfo, pci_functions=pci)
    assert out["host"] == "gpu01" and out["read"] is False
    assert out["volta_server"].get("ram_gb") == ram
    assert out["volta_server"]["gpu_count"] == count
    assert out["block"].startswith("# gpu01: read by volta.serving.discover")
