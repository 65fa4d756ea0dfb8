"""volta.serving test-lab stand-in for vLLM's use_existing_torch.py (written for the lab, not vLLM's).

Recorded behaviour of the real script (vllm 0.19.1 / 0.21.0 sdists): it rewrites every
``requirements/**/*.txt``, ``requirements/**/*.in`` and ``pyproject.toml`` that mentions torch,
dropping each line that contains "torch" (or, with ``--prefix``, only lines that start with a
``torch=``/``torchvision=``/``torchaudio=`` requirement or a ``"torch =`` pyproject entry) and prints
``>>> removed from <file>: <line>`` for each, so a build reuses the torch already installed.
"""

import argparse
import glob
import sys

PREFIXES = ("torch=", "torchvision=", "torchaudio=", '"torch =', '"torchvision =', '"torchaudio =')


def keep(line, prefix_only):
    text = line.strip().lower()
    if prefix_only:
        return not text.startswith(PREFIXES)
    return "torch" not in text


def strip_file(path, prefix_only):
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    if "torch" not in "".join(lines).lower():
        return
    kept = []
    for line in lines:
        if keep(line, prefix_only):
            kept.append(line)
        else:
            print(f">>> removed from {path}:", line.strip())
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(kept)


def main(argv):
    parser = argparse.ArgumentParser(description="Strip torch requirements to use the installed torch.")
    parser.add_argument("--prefix", action="store_true", help="strip prefix matches only")
    args = parser.parse_args(argv)
    files = sorted(glob.glob("requirements/**/*.txt", recursive=True)) + \
        sorted(glob.glob("requirements/**/*.in", recursive=True)) + ["pyproject.toml"]
    for path in files:
        strip_file(path, args.prefix)


if __name__ == "__main__":
    main(sys.argv[1:])
