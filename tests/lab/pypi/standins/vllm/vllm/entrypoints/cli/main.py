"""`vllm` console script of the volta.serving test-lab stand-in."""

import sys


def main():
    from vllm._volta_lab.cli import main as lab_main

    sys.exit(lab_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
