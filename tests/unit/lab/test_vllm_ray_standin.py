"""The vLLM stand-in's `--distributed-executor-backend ray` logic (vllm/_volta_lab/ray_cluster.py), without Ray.

The texts and rules are vLLM 0.21.0's (vllm/v1/executor/ray_utils.py, ray_executor_v2.py,
vllm/config/parallel.py); the real-Ray check is in tests/lab/pypi/README.md.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest

STANDIN = Path(__file__).resolve().parents[2] / "lab" / "pypi" / "standins" / "vllm" / "vllm"


@pytest.fixture
def lab(monkeypatch):
    """vllm._volta_lab from the source tree under a bare `vllm` package (the real __init__ needs build.json)."""
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    pkg = types.ModuleType("vllm")
    pkg.__path__ = [str(STANDIN)]
    monkeypatch.setitem(sys.modules, "vllm", pkg)
    from vllm._volta_lab import cli, log, ray_cluster, server

    monkeypatch.setattr(log, "PREFIX", "")
    return types.SimpleNamespace(cli=cli, ray=ray_cluster, server=server)


def test_world_and_pipeline_stages(lab):
    rc = lab.ray
    assert rc.sizes({"tensor_parallel_size": "2", "pipeline_parallel_size": "2"}) == (2, 2, 1, 4)
    assert rc.sizes({}) == (1, 1, 1, 1)
    # rank r: TP rank r % tp, stage r // tp (build_actor_name's numbering)
    assert [rc.rank_position(r, 2, 2) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert [rc.rank_position(r, 1, 2) for r in range(2)] == [(0, 0), (0, 1)]
    assert rc.actor_name("ab12c", 3, 2, 2) == "vllm_Worker_ab12c_TP1_PP1"
    assert rc.actor_name("ab12c", 1, 1, 2) == "vllm_Worker_ab12c_PP1"
    assert rc.actor_name("ab12c", 0, 1, 1) == "vllm_Worker_ab12c"


def test_bundles_and_the_legacy_pin(lab):
    rc = lab.ray
    assert rc.bundle_specs(4) == [{"GPU": 1.0}] * 4
    pinned = rc.bundle_specs(2, "10.0.0.5")
    assert pinned == [{"GPU": 1.0, "node:10.0.0.5": 0.001}, {"GPU": 1.0}]
    assert rc.use_v2({}) and not rc.use_v2({"VLLM_USE_RAY_V2_EXECUTOR_BACKEND": "0"})
    assert rc.get_ip({"VLLM_HOST_IP": "10.9.8.7"}) == "10.9.8.7"


def test_ranks_driver_node_first_and_local_ranks(lab):
    rc = lab.ray
    bundles = [(0, "nodeC", "10.0.0.3"), (1, "nodeA", "10.0.0.1"), (2, "nodeB", "10.0.0.2"), (3, "nodeA", "10.0.0.1")]
    assert [b[0] for b in rc.driver_first(bundles, "nodeA")] == [1, 3, 2, 0]
    assert rc.local_ranks([("A", [1]), ("A", [0]), ("B", [0])]) == [(0, "0,1"), (1, "0,1"), (0, "0")]


def test_config_errors(lab):
    rc = lab.ray
    assert rc.config_error({}, ray_found=True) is None
    assert rc.config_error({}, ray_found=False) == (
        "Failed to import Ray: No module named 'ray'.Please install Ray with `pip install ray`.")
    assert rc.config_error({"nnodes": "2"}, ray_found=True).startswith("nnodes > 1 can only be set")


def test_ray_check_only_with_the_flag(lab, monkeypatch, capsys):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert lab.cli._ray_check({"distributed_executor_backend": "mp"}) == 0
    assert lab.cli._ray_check({"distributed_executor_backend": "ray"}) == 1
    assert "validation error for ParallelConfig\n  Value error, Failed to import Ray" in capsys.readouterr().err


class FakeRay:
    """ray.wait / ray.get of a placement group that never becomes ready, or of a dead actor."""

    class exceptions:  # shaped like the ray.exceptions module
        class GetTimeoutError(Exception):
            pass

    def __init__(self, ready=False, dead=None):
        self.ready, self.dead, self.waits = ready, dead, []

    def wait(self, refs, num_returns=1, timeout=None):
        self.waits.append(timeout)
        time.sleep(0.01)
        if self.ready:
            return refs[:1], refs[1:]
        if self.dead is not None:
            return [refs[self.dead]], []
        return [], refs

    def get(self, ref, timeout=None):
        if self.dead is not None:
            raise RuntimeError("The actor died unexpectedly before finishing this task.\n\tThe actor died "
                               "because its node has died. Node Id: 4465e107")
        if not self.ready:
            raise self.exceptions.GetTimeoutError()
        return ref


class FakePG:
    def ready(self):
        return "pg-ready-ref"


def test_pg_wait_times_out_with_vllms_error(lab, capsys):
    specs = lab.ray.bundle_specs(4)
    ray = FakeRay()
    with pytest.raises(ValueError, match=r"^Cannot provide a placement group requiring 4\.0 GPUs") as err:
        lab.ray.wait_until_pg_ready(ray, FakePG(), specs, 0.03)
    assert str(err.value) == lab.ray.pg_timeout_error(specs, 0.03)
    assert "within 0.03 seconds.\nTensor parallel size may exceed available GPUs" in str(err.value)
    assert ray.waits[:3] == [10, 20, 40]  # ray_utils.py: 10 s, doubling
    assert "[ray_utils.py:464] Waiting for creating a placement group of specs for 0 seconds. specs=" \
        in capsys.readouterr().out
    one = lab.ray.pg_timeout_error([{"GPU": 1.0}], 1800)
    assert one == ("Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}] within 1800 "
                   "seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough resources.")


def test_pg_wait_returns_when_ready(lab, capsys):
    lab.ray.wait_until_pg_ready(FakeRay(ready=True), FakePG(), lab.ray.bundle_specs(2), 1800)
    assert "Waiting for creating" not in capsys.readouterr().out


class FakeActor:
    class run:  # actor.run.remote()
        @staticmethod
        def remote():
            return object()


class FakeConn:
    def poll(self):
        return False


def test_dead_worker_is_named_with_its_node(lab, capsys):
    placed = [("nodeA-id-0000", "10.0.0.1", [0]), ("nodeB-id-0000", "10.0.0.2", [0])]
    rc = lab.ray.monitor(FakeRay(dead=1), [FakeActor(), FakeActor()], placed, FakeConn())
    out = capsys.readouterr().out
    assert rc == 1
    assert ("[ray_executor_v2.py:465] RayWorkerProc rank=[1] died unexpectedly, shutting down executor. "
            "(volta lab: rank 1 on node 10.0.0.2 (nodeB-id): RuntimeError: The actor died because its node "
            "has died. Node Id: 4465e107)") in out
    assert "[core.py:1142] EngineCore encountered a fatal error.\nRuntimeError: Executor failed." in out


def test_dead_engine_health_503_and_requests_500(lab):
    srv = lab.server.bind("127.0.0.1", 0)
    state = lab.server.State({"dist": "vllm", "version": "0.21.0"}, ["m"], "m", 4096, [])
    lab.server.Handler.state = state
    srv.server_activate()
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}"

    def status(path, body=None):
        req = urllib.request.Request(base + path, data=body, headers={"content-type": "application/json"})  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310  loopback
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    try:
        assert status("/health")[0] == 200
        state.engine_dead = True
        assert status("/health")[0] == 503
        code, body = status("/v1/completions", json.dumps({"prompt": "hi"}).encode())
        assert code == 500
        assert json.loads(body)["error"] == {"message": lab.ray.ENGINE_DEAD_MESSAGE, "type": "InternalServerError",
                                             "param": None, "code": 500}
    finally:
        srv.shutdown()
        srv.server_close()
