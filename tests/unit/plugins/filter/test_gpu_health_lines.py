# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.gpu_health_lines filter (playbooks/status.yml), through Ansible's templating."""

from __future__ import annotations

import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import gpu_health_lines as plugin

GPU = {"index": 2, "bus_id": "00000000:3D:00.0", "failed": True, "throttle": ["gpu_idle", "hw_thermal_slowdown"],
       "ecc": {"volatile": {"corrected": 0, "uncorrected": 4}},
       "retired_pages": {"single_bit": 1, "double_bit": None, "pending": True},
       "pcie": {"gen_current": 3, "gen_max": 3, "width_current": 8, "width_max": 16}}


def test_filter_is_registered_under_its_documented_name():
    assert plugin.FilterModule().filters() == {"gpu_health_lines": plugin.gpu_health_lines}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "gpu_health_lines"


def test_lines_through_a_template():
    facts = {"status": "ok", "health": {"status": "ok", "gpus": [GPU], "missing": ["0000:88:00.0"]}}
    templar = Templar(variables={"facts": facts})
    templar.environment.filters["gpu_health_lines"] = plugin.gpu_health_lines
    lines = templar.template(trust_as_template("{{ facts | gpu_health_lines }}"))
    assert lines == ["GPU 2 00000000:3D:00.0: ECC uncorrected 4, retired 1+? PENDING, PCIe Gen3/3 x8/16, "
                     "throttle hw_thermal_slowdown, FAILED",
                     "PCI 0000:88:00.0: in sysfs, not listed by nvidia-smi (lost)"]


def test_fact_without_health():
    assert plugin.gpu_health_lines({"status": "no_driver"}) == ["health not read"]
