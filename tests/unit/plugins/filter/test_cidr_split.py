# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the volta.serving.cidr_split filter, through Ansible's templating."""

from __future__ import annotations

import pytest
import yaml
from ansible.template import Templar, trust_as_template
from ansible_collections.volta.serving.plugins.filter import cidr_split as plugin


def test_filter_is_registered_under_its_documented_name():
    assert plugin.FilterModule().filters() == {"cidr_split": plugin.cidr_split}
    assert yaml.safe_load(plugin.DOCUMENTATION)["name"] == "cidr_split"


@pytest.mark.parametrize(
    ("nets", "expected"),
    [
        (["10.0.0.0/8", "2001:DB8::/32"], {"ipv4": ["10.0.0.0/8"], "ipv6": ["2001:db8::/32"], "problems": 0}),
        ([], {"ipv4": [], "ipv6": [], "problems": 0}),
        (["10.0.0.5/24", "::/0"], {"ipv4": [], "ipv6": ["::/0"], "problems": 1}),
    ],
)
def test_filter_through_jinja(nets, expected):
    templar = Templar(loader=None, variables={"nets": nets})
    templar.environment.filters["cidr_split"] = plugin.cidr_split
    result = templar.template(trust_as_template("{{ nets | cidr_split }}"))
    assert result["ipv4"] == expected["ipv4"]
    assert result["ipv6"] == expected["ipv6"]
    assert len(result["problems"]) == expected["problems"]
