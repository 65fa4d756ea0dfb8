"""vLLM-shaped log lines on stdout: `INFO 11-29 14:07:01 [file.py:123] message`."""

import sys
import time

# "(EngineCore pid=N) " in the ray backend's engine core process, as vLLM's decorate_logs writes it
# (vllm/utils/system_utils.py:209); empty in the API server (the stand-in never wrote "(APIServer pid=N) ").
PREFIX = ""


def raw(text):
    """*text* on stdout, PREFIX before each of its lines."""
    sys.stdout.write("".join(PREFIX + line + "\n" for line in text.rstrip("\n").split("\n")))
    sys.stdout.flush()


def _emit(level, where, msg):
    raw(f"{level} {time.strftime('%m-%d %H:%M:%S')} [{where}] {msg}")


def info(where, msg):
    _emit("INFO", where, msg)


def warning(where, msg):
    _emit("WARNING", where, msg)


def error(where, msg):
    _emit("ERROR", where, msg)


def uvicorn(msg):
    sys.stdout.write(f"INFO:     {msg}\n")
    sys.stdout.flush()
