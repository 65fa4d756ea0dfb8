"""`python -m vllm.entrypoints.openai.api_server` of the test-lab stand-in."""

import sys

if __name__ == "__main__":
    from vllm._volta_lab.cli import serve_main

    sys.exit(serve_main(sys.argv[1:], mode="api_server"))
