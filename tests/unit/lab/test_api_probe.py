"""tests/lab/probe/api-probe: the outage arithmetic the engine_upgrade scenario and bench/ rely on."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROBE = Path(__file__).resolve().parents[2] / "lab" / "probe" / "api-probe"


def report(tmp_path, lines, *extra):
    log = tmp_path / "probe.log"
    log.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    out = subprocess.run([sys.executable, str(PROBE), "report", str(log), *extra], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def test_one_outage_from_first_failure_to_first_answer(tmp_path):
    rep = report(tmp_path, ["10.0 200 {\"version\": \"0.19.1\"}", "10.1 0", "10.2 502", "10.7 0",
                            "11.2 200 {\"version\": \"0.21.0\"}", "11.3 200 {\"version\": \"0.21.0\"}"])
    assert rep["requests"] == 6 and rep["answered"] == 3
    assert [(o["start"], o["end"], o["requests"], o["seconds"]) for o in rep["outages"]] == [(10.1, 11.2, 3, 1.1)]
    assert rep["outage_total_seconds"] == 1.1 and rep["outage_longest_seconds"] == 1.1
    assert rep["bodies"] == ['{"version": "0.19.1"}', '{"version": "0.21.0"}']


def test_outage_at_the_end_is_unfinished_and_window_filters(tmp_path):
    lines = ["1.0 0", "2.0 200 a", "3.0 0", "3.5 0"]
    rep = report(tmp_path, lines)
    assert [o.get("unfinished", False) for o in rep["outages"]] == [False, True]
    assert [o["seconds"] for o in rep["outages"]] == [1.0, 0.5]
    rep = report(tmp_path, lines, "--start", "1.5")
    assert rep["requests"] == 3 and [o["start"] for o in rep["outages"]] == [3.0]


def test_no_outage(tmp_path):
    rep = report(tmp_path, ["1.0 200 x", "1.1 200 x"])
    assert rep["outages"] == [] and rep["outage_total_seconds"] == 0 and rep["outage_longest_seconds"] == 0.0


def _recorded(log, status):
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return any(line.split(" ", 2)[1:2] == [status] for line in lines)


def test_run_records_status_and_body_until_stopped(tmp_path):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b'{"version": "0.21.0"}' if self.path == "/version" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    log = tmp_path / "run.log"
    try:
        for path, want in (("/version", "200"), ("/missing", "404")):
            proc = subprocess.Popen([sys.executable, str(PROBE), "run", f"http://127.0.0.1:{port}{path}", str(log),
                                     "--interval", "0.05"])
            # Stop it once it has recorded an answer (a loaded machine can take seconds to start Python):
            # a SIGTERM before its handler is installed would kill it instead of stopping it.
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline and not _recorded(log, want):
                time.sleep(0.05)
            if proc.poll() is None:
                proc.terminate()
            assert proc.wait(timeout=5) == 0
            rows = [line.split(" ", 2) for line in log.read_text(encoding="utf-8").splitlines()]
            assert rows and rows[-1][1] == want
    finally:
        server.shutdown()
    assert rows[0][2] == '{"version": "0.21.0"}'
    # Nobody listens on port 9 (discard) of loopback here: a refused connection is status 0.
    empty = tmp_path / "none.log"
    proc = subprocess.Popen([sys.executable, str(PROBE), "run", "http://127.0.0.1:9/version", str(empty),
                             "--interval", "0.05", "--timeout", "0.2"])
    try:
        proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        proc.terminate()
    proc.wait(timeout=5)
    assert {line.split(" ")[1] for line in empty.read_text(encoding="utf-8").splitlines()} == {"0"}
