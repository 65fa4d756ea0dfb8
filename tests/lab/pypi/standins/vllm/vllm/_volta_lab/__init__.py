"""Internals of the volta.serving test-lab vLLM stand-in (not the real vLLM)."""

import json
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def build_info():
    with open(os.path.join(_HERE, "build.json"), encoding="utf-8") as fh:
        return json.load(fh)
