"""bench/loadgen.py: the summary arithmetic on hand-made records, stream truncation, and the host refusal.

The records below are written by hand (not produced by the load generator), with figures chosen so
that every expected value can be checked on paper.
"""

import importlib.util
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

# The bench directory is not a package: load its loadgen.py by path.
LOADGEN_PATH = Path(__file__).resolve().parents[3] / "bench" / "loadgen.py"
LOADGEN_SPEC = importlib.util.spec_from_file_location("loadgen", LOADGEN_PATH)
loadgen = importlib.util.module_from_spec(LOADGEN_SPEC)
LOADGEN_SPEC.loader.exec_module(loadgen)


def rec(number, start, end, ok=True, stream=False, opened=None, error=None):
    """One hand-made request record."""
    return {"id": number, "kind": "chat-stream" if stream else "chat", "start": start, "end": end,
            "latency": end - start, "ok": ok, "stream": stream,
            "opened": stream if opened is None else opened,
            "error": error if error is not None or ok else "APIConnectionError: Connection error."}


# -- percentiles ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "pct", "expected"), [
    ([1.0], 50, 1.0),
    ([1.0], 99, 1.0),
    ([4.0, 1.0, 3.0, 2.0], 50, 2.0),  # rank ceil(0.5 * 4) = 2 of 1, 2, 3, 4
    ([4.0, 1.0, 3.0, 2.0], 99, 4.0),  # rank ceil(0.99 * 4) = 4
    ([float(v) for v in range(1, 101)], 50, 50.0),
    ([float(v) for v in range(1, 101)], 99, 99.0),
    ([float(v) for v in range(1, 201)], 99, 198.0),  # rank ceil(0.99 * 200) = 198
    ([0.5, 0.5, 9.0], 50, 0.5),
    ([], 50, None),
])
def test_percentile_is_nearest_rank(values, pct, expected):
    assert loadgen.percentile(values, pct) == expected


def test_latency_percentiles_count_only_the_requests_that_succeeded():
    records = [rec(0, 0.0, 0.1), rec(1, 0.0, 0.2), rec(2, 0.0, 0.3), rec(3, 0.0, 0.4),
               rec(4, 0.0, 30.0, ok=False)]  # a timeout: its 30 s are not a latency of the service
    summary = loadgen.summarize(records)
    assert summary["p50_s"] == pytest.approx(0.2)
    assert summary["p99_s"] == pytest.approx(0.4)
    assert summary["max_s"] == pytest.approx(0.4)
    assert (summary["total"], summary["ok"], summary["failed"]) == (5, 4, 1)


def test_latency_is_also_given_per_kind():
    records = [rec(0, 0.0, 0.01), rec(1, 0.0, 0.03), rec(2, 0.0, 0.8, stream=True), rec(3, 0.0, 1.0, stream=True),
               rec(4, 0.0, 0.2, ok=False, stream=True)]
    by_kind = loadgen.summarize(records)["by_kind"]
    assert by_kind["chat"] == {"total": 2, "failed": 0, "p50_s": pytest.approx(0.01), "p99_s": pytest.approx(0.03)}
    assert by_kind["chat-stream"] == {"total": 3, "failed": 1, "p50_s": pytest.approx(0.8),
                                      "p99_s": pytest.approx(1.0)}


def test_a_run_where_everything_failed_has_no_latency():
    summary = loadgen.summarize([rec(0, 0.0, 0.01, ok=False), rec(1, 0.5, 0.51, ok=False)])
    assert summary["p50_s"] is None
    assert summary["p99_s"] is None


# -- outage ----------------------------------------------------------------------------------------------

def test_no_failure_no_outage():
    records = [rec(0, 0.0, 1.0), rec(1, 0.5, 1.5)]
    assert loadgen.outage(records) is None
    assert loadgen.summarize(records)["outage_s"] == 0.0


def test_outage_runs_from_the_first_failed_start_to_the_next_successful_start():
    records = [
        rec(0, 0.0, 0.2),
        rec(1, 1.0, 1.1, ok=False),
        rec(2, 1.5, 1.6, ok=False),
        rec(3, 2.0, 2.1, ok=False),
        rec(4, 3.5, 3.6),  # the first request that started after the failures and succeeded
        rec(5, 4.0, 4.2),
    ]
    span = loadgen.outage(records)
    assert span == {"seconds": pytest.approx(2.5), "start": 1.0, "stop": 3.5, "requests": 3}


def test_the_longest_of_several_outages_is_reported():
    records = [
        rec(0, 0.0, 0.1, ok=False),  # 0.0 .. 0.5: 0.5 s
        rec(1, 0.5, 0.6),
        rec(2, 1.0, 1.1, ok=False),  # 1.0 .. 2.2: 1.2 s
        rec(3, 1.8, 1.9, ok=False),
        rec(4, 2.2, 2.3),
        rec(5, 3.0, 3.1, ok=False),  # 3.0 .. 3.1: 0.1 s
        rec(6, 3.1, 3.2),
    ]
    span = loadgen.outage(records)
    assert span["seconds"] == pytest.approx(1.2)
    assert (span["start"], span["stop"], span["requests"]) == (1.0, 2.2, 2)


def test_requests_are_ordered_by_start_not_by_number_or_end():
    # Listed out of order; by start: 0.0 ok, 0.4 failed, 0.6 failed, 0.9 ok (ended late, still ok).
    records = [rec(3, 0.9, 5.0), rec(1, 0.6, 0.7, ok=False), rec(0, 0.0, 0.3), rec(2, 0.4, 0.45, ok=False)]
    span = loadgen.outage(records)
    assert span["seconds"] == pytest.approx(0.5)
    assert (span["start"], span["stop"], span["requests"]) == (0.4, 0.9, 2)


def test_a_request_that_succeeded_inside_the_failures_splits_the_outage():
    # Concurrent requests: a stream on the healthy replica (started at 1.2, ok) breaks the run.
    records = [rec(0, 1.0, 1.1, ok=False), rec(1, 1.2, 4.0, stream=True), rec(2, 1.3, 1.4, ok=False),
               rec(3, 2.5, 2.6)]
    span = loadgen.outage(records)
    assert span["seconds"] == pytest.approx(1.2)  # 1.3 .. 2.5, not 1.0 .. 2.5
    assert span["requests"] == 1


def test_an_outage_at_the_end_lasts_until_its_last_request_ended():
    records = [rec(0, 0.0, 0.1), rec(1, 1.0, 1.2, ok=False), rec(2, 1.5, 4.0, ok=False),
               rec(3, 2.0, 2.5, ok=False)]
    span = loadgen.outage(records)
    assert span["seconds"] == pytest.approx(3.0)  # 1.0 .. 4.0, the latest end of the run
    assert span["requests"] == 3


def test_a_run_where_everything_failed_is_one_outage():
    records = [rec(0, 0.0, 2.0, ok=False), rec(1, 0.1, 0.2, ok=False)]
    assert loadgen.summarize(records)["outage_s"] == pytest.approx(2.0)


# -- truncated streams -----------------------------------------------------------------------------

def test_truncated_counts_streams_that_opened_and_did_not_end_properly():
    records = [
        rec(0, 0.0, 1.0, stream=True),  # a whole stream
        rec(1, 0.0, 0.4, ok=False, stream=True, error="APIConnectionError: Connection error."),  # cut
        rec(2, 0.0, 0.01, ok=False, stream=True, opened=False),  # refused before any response: failed only
        rec(3, 0.0, 0.5, ok=False, stream=True,
            error="StreamEnded: the stream closed without a chunk carrying a finish_reason"),
        rec(4, 0.0, 0.01, ok=False),  # a plain request that failed is never truncated
    ]
    summary = loadgen.summarize(records)
    assert summary["truncated"] == 2
    assert summary["failed"] == 4
    assert summary["streams"] == 4
    assert summary["errors"] == {"APIConnectionError": 3, "StreamEnded": 1}


def chunk(finish=None, text="x"):
    return SimpleNamespace(choices=[SimpleNamespace(finish_reason=finish, delta=SimpleNamespace(content=text))])


class FakeStream:
    """Hand-made chunks, then either a normal end or the error a cut connection raises."""

    def __init__(self, chunks, error=None):
        self.chunks = chunks
        self.error = error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        yield from self.chunks
        if self.error is not None:
            raise self.error


def fake_client(stream):
    def create(**kwargs):
        return stream

    return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))


class CutConnection(Exception):
    """Stands for the client's error when the peer closes mid-body."""


@pytest.mark.parametrize(("stream", "ok", "is_truncated", "error_prefix"), [
    (FakeStream([chunk(), chunk(), chunk("stop", "")]), True, False, None),
    (FakeStream([chunk(), chunk()], CutConnection("peer closed connection")), False, True, "CutConnection"),
    (FakeStream([chunk(), chunk("stop", "")], CutConnection("after the last chunk")), False, True, "CutConnection"),
    (FakeStream([chunk(), chunk()]), False, True, "StreamEnded"),  # closed cleanly, but no finish_reason
    (FakeStream([]), False, True, "StreamEnded"),
])
def test_a_stream_is_ok_only_with_a_finish_reason_and_a_normal_close(stream, ok, is_truncated, error_prefix):
    out = loadgen.one_request(fake_client(stream), "chat-stream", "m", 0, None, 30.0)
    assert out["ok"] is ok
    assert out["truncated"] is is_truncated
    assert out["opened"] is True
    if error_prefix is None:
        assert out["error"] is None
        assert out["finish_reason"] == "stop"
    else:
        assert out["error"].startswith(error_prefix)


def test_a_stream_refused_before_it_opened_failed_but_is_not_truncated():
    def refuse(**kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=refuse)))
    out = loadgen.one_request(client, "chat-stream", "m", 0, None, 30.0)
    assert (out["ok"], out["opened"], out["truncated"]) == (False, False, False)
    assert out["error"].startswith("ConnectionRefusedError")


def test_plan_spreads_the_streams_evenly():
    kinds = loadgen.plan(10, 0.5)
    assert kinds.count("chat-stream") == 5
    assert kinds.count("chat") + kinds.count("completion") == 5
    assert "completion" in kinds
    assert loadgen.plan(4, 0.0) == ["chat", "completion", "chat", "completion"]
    assert loadgen.plan(3, 1.0) == ["chat-stream"] * 3


# -- host refusal -------------------------------------------------------------------------------------

def resolver(*addresses):
    """A getaddrinfo stand-in answering the given addresses."""
    def resolve(host, port, family=0, kind=0):
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, kind, 6, "", (a, port)) for a in addresses]
    return resolve


@pytest.mark.parametrize(("url", "addresses"), [
    ("http://127.0.0.1:8000/v1", ["127.0.0.1"]),
    ("http://127.3.4.5:8000/v1", ["127.3.4.5"]),
    ("http://[::1]:8000/v1", ["::1"]),
    ("http://172.18.0.5:8000/v1", ["172.18.0.5"]),
    ("http://172.31.255.254/v1", ["172.31.255.254"]),
    ("https://volta-lab-host:8443/v1", ["172.20.0.3"]),
])
def test_loopback_and_docker_bridge_addresses_are_allowed(url, addresses):
    assert loadgen.check_host(url, resolve=resolver(*addresses)) == addresses


@pytest.mark.parametrize(("url", "addresses", "named"), [
    ("http://10.0.0.5:8000/v1", ["10.0.0.5"], "10.0.0.5"),
    ("http://192.168.1.10/v1", ["192.168.1.10"], "192.168.1.10"),
    ("http://172.32.0.1/v1", ["172.32.0.1"], "172.32.0.1"),  # just past 172.16.0.0/12
    ("http://172.15.255.255/v1", ["172.15.255.255"], "172.15.255.255"),
    ("https://api.example.com/v1", ["93.184.215.14"], "93.184.215.14"),
    ("http://mixed.example/v1", ["127.0.0.1", "8.8.8.8"], "8.8.8.8"),  # every address must be allowed
    ("http://[2001:db8::1]/v1", ["2001:db8::1"], "2001:db8::1"),
])
def test_other_hosts_are_refused_saying_why(url, addresses, named):
    with pytest.raises(loadgen.RefusedHost) as err:
        loadgen.check_host(url, resolve=resolver(*addresses))
    text = str(err.value)
    assert named in text
    assert "only talks to loopback (127.0.0.0/8, ::1) or the lab's Docker bridge networks (172.16.0.0/12)" in text


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "127.0.0.1:8000", "http:///v1"])
def test_urls_without_an_http_scheme_and_host_are_refused(url):
    with pytest.raises(loadgen.RefusedHost, match="not an http"):
        loadgen.check_host(url, resolve=resolver("127.0.0.1"))


def test_a_host_that_does_not_resolve_is_refused():
    def fail(*args):
        raise socket.gaierror(-2, "Name or service not known")

    with pytest.raises(loadgen.RefusedHost, match="does not resolve"):
        loadgen.check_host("http://nowhere.invalid/v1", resolve=fail)


def test_the_real_resolver_takes_a_loopback_literal():
    assert loadgen.check_host("http://127.0.0.1:9/v1") == ["127.0.0.1"]
