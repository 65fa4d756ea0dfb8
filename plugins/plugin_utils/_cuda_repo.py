# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's CUDA apt repository: its URL for a host, and what of it differs on the host.

Pure Python, no Ansible imports; controller-only. The one home of the repository's default URL (NVIDIA's
name for the distribution: ubuntu2204, ubuntu2404, debian12) and of the decisions of the internal role
volta.serving._cuda_repo (which nvidia_driver and cuda_toolkit include), served by the filters
``volta.serving.cuda_repo_url`` and ``volta.serving.cuda_repo_changes``.
"""

from __future__ import annotations

import re

DEFAULT_URL = "https://developer.download.nvidia.com/compute/cuda/repos/{distro}/x86_64/"
# The keyring package's own one-line source (/etc/apt/sources.list.d/cuda-<distro>-x86_64.list).
ONE_LINE_SOURCE = r"^/etc/apt/sources\.list\.d/cuda-.*\.list$"


def distro_name(facts):
    """NVIDIA's name of the host's distribution in its repository URLs; "unknown" before facts are gathered."""
    facts = facts if isinstance(facts, dict) else {}
    distribution = facts.get("distribution")
    if distribution is None:
        return "unknown"
    if distribution == "Debian":
        return f"debian{facts.get('distribution_major_version', '')}"
    return "ubuntu" + str(facts.get("distribution_version", "")).replace(".", "")


def repo_url(url, facts):
    """*url* when it is set, else the default repository of the host's distribution."""
    url = "" if url is None else str(url).strip()
    return url if url else DEFAULT_URL.format(distro=distro_name(facts))


def repo_changes(state, source_file, source, keyring_version):
    """What the host's read (volta.serving.package_state) finds different from the repository the role sets up.

    *state* is the read's result (installed, apt_sources, read_sources), *source* the fields
    ansible.builtin.deb822_repository writes into *source_file*. Returns {source_differs, keyring_needed,
    one_line_sources, needed}: the source file differs; python3-debian or cuda-keyring *keyring_version* is
    to be installed, or a one-line source of the keyring package is to be removed (those found in the apt
    sources); needed: either.
    """
    state = state if isinstance(state, dict) else {}
    installed = state.get("installed") or {}
    one_line = [path for path in state.get("apt_sources") or [] if re.match(ONE_LINE_SOURCE, str(path))]
    source_differs = (state.get("read_sources") or {}).get(source_file) != source
    keyring_needed = ("python3-debian" not in installed
                      or installed.get("cuda-keyring", "") != keyring_version
                      or len(one_line) > 0)
    return {"source_differs": source_differs, "keyring_needed": keyring_needed, "one_line_sources": one_line,
            "needed": source_differs or keyring_needed}
