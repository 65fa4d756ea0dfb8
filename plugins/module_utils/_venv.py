# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a venv has installed, as one digest, read without running its interpreter.

Pure Python, no Ansible imports. volta.serving.pip_cuda_audit returns the digest of the venv it audited,
volta.serving.engine_installs that of each install it reads: the engine role audits a finished install
again only when the two differ. Private to the collection: no compatibility promise outside it.
"""

from __future__ import annotations

import glob
import hashlib
import os


def venv_of(python):
    """The venv of the interpreter *python* (``<venv>/bin/python``)."""
    return os.path.dirname(os.path.dirname(python))


def fingerprint(venv):
    """sha256 of the names and modification times of the ``*.dist-info`` directories in the venv's
    ``lib/python*/site-packages``, or None when it has none.

    pip and uv write a new ``.dist-info`` directory for every distribution they install, upgrade or reinstall,
    and remove the old one: any such change gives another digest. Running the venv's programs does not touch
    them (bytecode goes to ``__pycache__``)."""
    rows = []
    for site in sorted(glob.glob(os.path.join(glob.escape(venv), "lib", "python*", "site-packages"))):
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            try:
                mtime = os.stat(os.path.join(site, name)).st_mtime_ns
            except OSError:
                continue
            rows.append(f"{os.path.basename(os.path.dirname(site))}/{name} {mtime}\n")
    if not rows:
        return None
    return hashlib.sha256("".join(rows).encode("utf-8")).hexdigest()
