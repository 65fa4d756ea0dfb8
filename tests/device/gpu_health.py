#!/usr/bin/env python3
"""gpu_health.py FACTS_JSON: the health rules on a real host's volta_gpu fact (see README.md beside this file).

FACTS_JSON is the volta_gpu fact that the gpu_facts module wrote on the host (tests/device/run's
gpu_facts step saves it). Prints one JSON object: the fact's health section, status.yml's per-GPU health
lines, and the preflight's health findings for the host as it is, with one instance on every GPU (the
same functions the serving plan and status.yml call). Reads nothing else and changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "collections"))

from ansible_collections.volta.serving.plugins.module_utils._gpu_health import health_lines
from ansible_collections.volta.serving.plugins.plugin_utils._health_rules import check_gpu_health


def main(argv):
    facts = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    gpus = facts.get("gpus") or []
    server = {"gpu_count": len(gpus)}
    instance = {"name": "every-gpu", "enabled": True, "gpus": [gpu.get("index") for gpu in gpus]}
    findings = check_gpu_health(facts, server, [instance], {"host": "device"})
    print(json.dumps({"health": facts.get("health"), "lines": health_lines(facts), "findings": findings},
                     indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
