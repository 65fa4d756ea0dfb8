# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: cuda_repo_url
short_description: NVIDIA's CUDA repository URL for a host, the given one or its distribution's default
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
description:
  - The given URL when it is not empty, else
    C(https://developer.download.nvidia.com/compute/cuda/repos/<distro>/x86_64/) with NVIDIA's name of the
    host's distribution (V(ubuntu2204), V(ubuntu2404), V(debian12); V(unknown) before the facts are gathered).
  - The same file serves C(volta.serving.cuda_repo_changes), what of the repository differs on the host
    (plugins/plugin_utils/_cuda_repo.py).
  - Runs on the controller; reads nothing on the host.
options:
  _input:
    description: The URL (C(nvidia_driver_cuda_repo_url), or the serving plan's C(shared) value); V("") for the default.
    type: str
    required: true
  facts:
    description: The host's C(ansible_facts) (distribution, distribution_version, distribution_major_version).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The repository of this host
  ansible.builtin.debug:
    msg: "{{ '' | volta.serving.cuda_repo_url(ansible_facts) }}"
"""

RETURN = r"""
_value:
  description: The repository's URL (ends with a slash).
  type: str
"""


def cuda_repo_url(url, facts):
    """Filter entry point: see DOCUMENTATION."""
    # Imported on call, not at load: Ansible loads every filter file of the collection in each
    # task worker that uses any one of them (docs/dev/internals.md, Where a change goes).
    from ansible_collections.volta.serving.plugins.plugin_utils._cuda_repo import repo_url

    return repo_url(url, facts)


def cuda_repo_changes(state, source_file, source, keyring_version):
    """{source_differs, keyring_needed, one_line_sources, needed}: see _cuda_repo.repo_changes."""
    from ansible_collections.volta.serving.plugins.plugin_utils._cuda_repo import repo_changes

    return repo_changes(state, source_file, source, keyring_version)


class FilterModule:
    """volta.serving.cuda_repo_url and volta.serving.cuda_repo_changes."""

    def filters(self):
        return {"cuda_repo_url": cuda_repo_url, "cuda_repo_changes": cuda_repo_changes}
