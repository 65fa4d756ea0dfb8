#!/usr/bin/env python3
"""The binary audit (module_utils/_binary_audit.py) on a real torch venv of a real GPU host.

Reads every ELF shared object of the venv's site-packages (torch's own libraries, the nvidia-*
CUDA wheels, triton, ...) the way volta.serving.cuda_binary_audit does, and judges them twice:
for the host's own GPU and for a V100 (7.0). Needs no Ansible. Prints one JSON object.

    python3 tests/device/binary_audit.py [VENV_PYTHON] [HOST_COMPUTE_CAPABILITY]
"""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "collections"))
from ansible_collections.volta.serving.plugins.module_utils._binary_audit import (
    SITE_PROBE,
    audit,
    find_files,
    parse_sm,
    read_torch_version,
)


def main():
    python = sys.argv[1] if len(sys.argv) > 1 else "/opt/torch/.venv/bin/python"
    own = sys.argv[2] if len(sys.argv) > 2 else "9.0"
    sites = json.loads(subprocess.run([python, "-I", "-c", SITE_PROBE], capture_output=True, text=True,
                                      check=True).stdout)
    version, cuda = (None, None)
    for site in sites:
        path = Path(site) / "torch" / "version.py"
        if path.is_file():
            version, cuda = read_torch_version(path.read_text(encoding="utf-8", errors="replace"))
    files = find_files(sites)
    out = {"python": python, "torch": version, "torch_cuda": cuda, "files": len(files)}
    for label, cc in (("own_gpu", own), ("v100", "7.0")):
        start = time.monotonic()
        result = audit(files, parse_sm(cc), cuda, version)
        out[label] = {"compute_capability": cc, "seconds": round(time.monotonic() - start, 2),
                      "summary": result["summary"], "problems": result["problems"][:12],
                      "problem_count": len(result["problems"]), "read_errors": result["read_errors"][:5]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
