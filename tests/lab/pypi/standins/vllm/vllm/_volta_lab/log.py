"""vLLM-shaped log lines on stdout: `INFO 11-29 14:07:01 [file.py:123] message`."""

import sys
import time


def _emit(level, where, msg):
    stamp = time.strftime("%m-%d %H:%M:%S")
    sys.stdout.write(f"{level} {stamp} [{where}] {msg}\n")
    sys.stdout.flush()


def info(where, msg):
    _emit("INFO", where, msg)


def warning(where, msg):
    _emit("WARNING", where, msg)


def error(where, msg):
    _emit("ERROR", where, msg)


def uvicorn(msg):
    sys.stdout.write(f"INFO:     {msg}\n")
    sys.stdout.flush()
