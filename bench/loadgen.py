"""bench/loadgen.py: a bounded load generator and client checks that drive the REAL ``openai`` client.

  python bench/loadgen.py --base-url URL --key KEY --model NAME --requests N --concurrency C
                          [--stream-share 0.5] [--timeout 30] [--max-tokens T] [--json out.json]

It sends exactly N requests, at most C at a time, then stops: non-streaming chat completions,
streaming chat completions (a share of --stream-share of them) and text completions, mixed in a fixed
order. The client is the official ``openai`` package at the version tests/lab/probe/openai_venv.py
pins (its venv is built on first use, outside the checkout), with its own retries off
(``max_retries=0``): a failure the endpoint lets through is counted, not hidden by the client.

Only loopback (127.0.0.0/8, ::1) and the lab's Docker bridge networks (172.16.0.0/12) are reached:
the URL's host must resolve to those addresses only, else the run is refused before any request.

Per request it records its kind, start and end (seconds since the run began), latency, ok, the
error (exception class and message) and, for streams, whether the stream opened, how many chunks
came, the finish_reason and whether it was truncated. A stream is ok when a chunk carried a
finish_reason and the stream then closed normally; one that opened (the HTTP response began) but did
not end so is **truncated**. The summary: total, ok, failed (every request not ok, the truncated
included), truncated, p50/p99 latency of the requests that succeeded (nearest rank; also per kind,
since a streamed answer lasts far longer than a plain one), and the **outage**: the longest span
during which every request that started failed.

As a module: ``run_load(...)`` returns the records and their summary, ``summarize(records)`` does
the arithmetic on records alone, ``client_checks(base_url, key, model)`` returns a list of problems
(empty when chat, streaming, completions, /v1/models, a wrong key and a missing key all behave).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import socket
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
ALLOWED_NETWORKS = (
    ipaddress.ip_network("127.0.0.0/8"),  # loopback
    ipaddress.ip_network("::1/128"),  # loopback, IPv6
    ipaddress.ip_network("172.16.0.0/12"),  # Docker's bridge networks (the lab's containers)
)
KINDS = ("chat", "chat-stream", "completion")


class RefusedHost(ValueError):
    """The URL's host is not loopback or a lab container: no request is sent."""


def allowed_address(address):
    """True when *address* (text or ipaddress object) lies in loopback or a Docker bridge network."""
    addr = ipaddress.ip_address(str(address).split("%", 1)[0])
    if getattr(addr, "ipv4_mapped", None) is not None:
        addr = addr.ipv4_mapped
    return any(addr.version == net.version and addr in net for net in ALLOWED_NETWORKS)


def check_host(base_url, resolve=socket.getaddrinfo):
    """The addresses *base_url*'s host resolves to, when all of them are allowed; else RefusedHost."""
    parsed = urllib.parse.urlsplit(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise RefusedHost(f"loadgen: refusing {base_url!r}: not an http(s) URL with a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    rule = ("the load generator only talks to loopback (127.0.0.0/8, ::1) or the lab's Docker bridge "
            "networks (172.16.0.0/12)")
    try:
        infos = resolve(parsed.hostname, port, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise RefusedHost(f"loadgen: refusing {base_url}: {parsed.hostname} does not resolve ({exc}); {rule}") from exc
    addresses = sorted({info[4][0] for info in infos})
    others = [a for a in addresses if not allowed_address(a)]
    if not addresses or others:
        raise RefusedHost(f"loadgen: refusing {base_url}: {parsed.hostname} resolves to "
                          f"{', '.join(others or ['nothing'])}; {rule}")
    return addresses


# -- the arithmetic (records in, figures out; no client needed) --------------------------------------

def percentile(values, pct):
    """Nearest-rank percentile: the smallest value with at least *pct* % of the values at or below it."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def outage(records):
    """The longest span during which every request that started failed: a dict, or None when none failed.

    Requests are taken in the order they started; a run of failed ones lasts from the first one's
    start to the start of the next request that succeeded, or, when none followed, to the latest end
    among the run's requests (when the last of them was known to have failed).
    """
    ordered = sorted(records, key=lambda r: (r["start"], r["id"]))
    best = None
    run = []
    for rec in [*ordered, None]:
        if rec is not None and not rec["ok"]:
            run.append(rec)
            continue
        if run:
            stop = rec["start"] if rec is not None else max(r["end"] for r in run)
            span = {"seconds": stop - run[0]["start"], "start": run[0]["start"], "stop": stop,
                    "requests": len(run)}
            if best is None or span["seconds"] > best["seconds"]:
                best = span
            run = []
    return best


def truncated(record):
    """A stream whose HTTP response began (it opened) but that did not end properly."""
    return bool(record.get("stream") and record.get("opened") and not record["ok"])


def summarize(records):
    """The figures of a run from its records alone."""
    ok = [r for r in records if r["ok"]]
    latencies = [r["latency"] for r in ok]
    errors = {}
    for rec in records:
        if not rec["ok"]:
            name = (rec.get("error") or "unknown").split(":", 1)[0]
            errors[name] = errors.get(name, 0) + 1
    span = outage(records)
    by_kind = {}
    for kind in sorted({r["kind"] for r in records}):
        mine = [r for r in records if r["kind"] == kind]
        done = [r["latency"] for r in mine if r["ok"]]
        by_kind[kind] = {"total": len(mine), "failed": sum(1 for r in mine if not r["ok"]),
                         "p50_s": percentile(done, 50), "p99_s": percentile(done, 99)}
    return {
        "total": len(records),
        "ok": len(ok),
        "failed": len(records) - len(ok),
        "truncated": sum(1 for r in records if truncated(r)),
        "streams": sum(1 for r in records if r.get("stream")),
        "p50_s": percentile(latencies, 50),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies) if latencies else None,
        "outage_s": span["seconds"] if span else 0.0,
        "outage": span,
        "errors": dict(sorted(errors.items())),
        "by_kind": by_kind,
        "duration_s": (max(r["end"] for r in records) - min(r["start"] for r in records)) if records else 0.0,
    }


def plan(requests, stream_share):
    """The kind of each request: *stream_share* of them streaming chat, evenly spread, the rest
    alternating between chat and completions."""
    kinds = []
    plain = 0
    for i in range(requests):
        if math.floor((i + 1) * stream_share) > math.floor(i * stream_share):
            kinds.append("chat-stream")
        else:
            kinds.append("chat" if plain % 2 == 0 else "completion")
            plain += 1
    return kinds


# -- the client ---------------------------------------------------------------------------------------

def openai_module():
    """The real ``openai`` package, from the cached venv of the pinned version."""
    probe = str(TOP / "tests" / "lab" / "probe")
    if probe not in sys.path:
        sys.path.insert(0, probe)
    import openai_venv

    site = str(openai_venv.site_packages())
    if site not in sys.path:
        sys.path.insert(0, site)
    import openai

    if openai.__version__ != openai_venv.OPENAI_VERSION:
        raise RuntimeError(f"loadgen: imported openai {openai.__version__} from {openai.__file__}, "
                           f"not the pinned {openai_venv.OPENAI_VERSION}")
    return openai


def error_text(exc):
    message = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {message}"


def one_request(client, kind, model, number, max_tokens, timeout):
    """Send one request; the fields of its record that depend on the answer.

    The client's *timeout* bounds the connection and each read; a stream is also cut (and counted
    as truncated) once it has lasted *timeout* seconds in all.
    """
    deadline = time.monotonic() + timeout
    prompt = f"Say hello to request {number}."
    out = {"stream": kind == "chat-stream", "opened": False, "chunks": 0, "finish_reason": None,
           "truncated": False, "ok": False, "error": None}
    try:
        if kind == "chat":
            resp = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                                  max_tokens=max_tokens)
            out["finish_reason"] = resp.choices[0].finish_reason
            out["ok"] = bool(resp.choices[0].message.content) and out["finish_reason"] is not None
        elif kind == "completion":
            resp = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens)
            out["finish_reason"] = resp.choices[0].finish_reason
            out["ok"] = bool(resp.choices[0].text) and out["finish_reason"] is not None
        else:
            stream = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                                    max_tokens=max_tokens, stream=True)
            out["opened"] = True
            with stream:
                for chunk in stream:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the stream lasted more than {timeout} s")
                    out["chunks"] += 1
                    for choice in chunk.choices:
                        if choice.finish_reason:
                            out["finish_reason"] = choice.finish_reason
            # The iteration ended without an exception: the stream closed normally.
            out["ok"] = out["finish_reason"] is not None
            if not out["ok"]:
                out["error"] = "StreamEnded: the stream closed without a chunk carrying a finish_reason"
        if not out["ok"] and out["error"] is None:
            out["error"] = "EmptyAnswer: no text or no finish_reason in the answer"
    except Exception as exc:  # every failure is a result of the run
        out["error"] = error_text(exc)
    out["truncated"] = truncated(out)
    return out


def run_load(base_url, key, model, requests, concurrency, stream_share=0.5, timeout=30.0, max_tokens=None,
             on_done=None):
    """Send *requests* requests, *concurrency* at a time; returns {"config", "started_at", "summary", "records"}.

    *on_done* (optional) is called with each record as it completes (from the worker threads).
    """
    check_host(base_url)
    openai = openai_module()
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)
    kinds = plan(requests, stream_share)
    records = [None] * requests
    lock = threading.Lock()
    began_wall = time.time()
    began = time.monotonic()

    def work(i):
        start = time.monotonic() - began
        result = one_request(client, kinds[i], model, i, max_tokens, timeout)
        end = time.monotonic() - began
        rec = {"id": i, "kind": kinds[i], "start": round(start, 6), "end": round(end, 6),
               "latency": round(end - start, 6), **result}
        with lock:
            records[i] = rec
        if on_done is not None:
            on_done(rec)

    try:
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            list(pool.map(work, range(requests)))
    finally:
        client.close()
    return {"config": {"base_url": base_url, "model": model, "requests": requests, "concurrency": concurrency,
                       "stream_share": stream_share, "timeout_s": timeout, "max_tokens": max_tokens,
                       "openai": openai.__version__},
            "started_at": began_wall, "summary": summarize(records), "records": records}


def client_checks(base_url, key, model, timeout=30.0):
    """What a new user tries first, with the real client: a list of problems, empty when all behave."""
    check_host(base_url)
    openai = openai_module()
    problems = []
    good = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)
    messages = [{"role": "user", "content": "Say hello."}]

    def attempt(what, call):
        try:
            return call()
        except Exception as exc:  # reported as a problem
            problems.append(f"{what}: {error_text(exc)}")
            return None

    resp = attempt("chat", lambda: good.chat.completions.create(model=model, messages=messages))
    if resp is not None and not (resp.choices and resp.choices[0].message.content):
        problems.append("chat: no text in the answer")

    def stream_check():
        finish, chunks = None, 0
        with good.chat.completions.create(model=model, messages=messages, stream=True) as stream:
            for chunk in stream:
                chunks += 1
                for choice in chunk.choices:
                    finish = choice.finish_reason or finish
        return chunks, finish

    got = attempt("streaming chat", stream_check)
    if got is not None and got[1] is None:
        problems.append(f"streaming chat: {got[0]} chunks and none carried a finish_reason")
    resp = attempt("completions", lambda: good.completions.create(model=model, prompt="Say hello.", max_tokens=8))
    if resp is not None and not (resp.choices and resp.choices[0].text):
        problems.append("completions: no text in the answer")
    listed = attempt("/v1/models", lambda: [m.id for m in good.models.list()])
    if listed is not None and model not in listed:
        problems.append(f"/v1/models: {model} not listed (listed: {', '.join(listed) or 'none'})")
    good.close()

    wrong = openai.OpenAI(base_url=base_url, api_key=key + "-wrong", max_retries=0, timeout=timeout)
    # No Authorization header at all: the request tells the client to omit it (without a key the
    # client refuses to send anything).
    missing = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=timeout)
    omitted = {"Authorization": openai.Omit()}
    for what, client, headers in (("wrong key", wrong, None), ("missing key", missing, omitted)):
        try:
            client.chat.completions.create(model=model, messages=messages, extra_headers=headers)
            problems.append(f"{what}: the request was answered, expected 401")
        except openai.AuthenticationError as exc:
            if exc.status_code != 401:
                problems.append(f"{what}: status {exc.status_code}, expected 401")
        except Exception as exc:  # reported as a problem
            problems.append(f"{what}: {error_text(exc)}, expected openai.AuthenticationError (401)")
        client.close()
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--key", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--stream-share", type=float, default=0.5)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds, per request")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--json", help="write the config, summary and every record here")
    parser.add_argument("--checks", action="store_true", help="run client_checks first; a problem stops the run")
    args = parser.parse_args(argv)
    if not 0 <= args.stream_share <= 1 or args.requests < 1 or args.concurrency < 1:
        parser.error("--stream-share is between 0 and 1; --requests and --concurrency are at least 1")
    try:
        if args.checks:
            problems = client_checks(args.base_url, args.key, args.model, args.timeout)
            for problem in problems:
                print(f"loadgen: check failed: {problem}")
            if problems:
                return 1
        result = run_load(args.base_url, args.key, args.model, args.requests, args.concurrency,
                          args.stream_share, args.timeout, args.max_tokens)
    except RefusedHost as exc:
        print(exc, file=sys.stderr)
        return 2
    summary = result["summary"]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    figures = {k: v for k, v in summary.items() if k not in ("outage", "by_kind")}
    print(json.dumps(figures))
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
