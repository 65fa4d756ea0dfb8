"""`vllm serve --distributed-executor-backend ray` of the test-lab stand-in, on the REAL `ray` package.

Behaviour recorded from the real vLLM 0.21.0 source (written from it, not copied; paths under vllm/):

- v1/executor/abstract.py:61, envs.py:786: "ray" means RayExecutorV2 unless
  VLLM_USE_RAY_V2_EXECUTOR_BACKEND=0 (then the legacy RayDistributedExecutor).
- v1/executor/ray_utils.py:525 initialize_ray_cluster: ``ray.init(address=None, runtime_env=None)``
  (:584; Ray then reads RAY_ADDRESS, else finds or starts a local Ray), one bundle ``{"GPU": 1.0}`` per
  rank (:634), strategy PACK (:661). Only the legacy executor (require_gpu_on_driver) needs a GPU on
  the driver node (:647) and pins bundle 0 there with ``node:<get_ip()>: 0.001`` (:657); V2 does not
  (ray_executor_v2.py:260). _wait_until_pg_ready (:442): ray.wait every 10 s, doubling, while under
  PG_WAIT_TIMEOUT = 1800 (:29, a constant: no env var; the stand-in reads VOLTA_LAB_RAY_PG_WAIT_TIMEOUT),
  then the ValueError of :486 / :498. _verify_bundles (:276) warns when a node holds fewer bundles than TP.
- ray_executor_v2.py: ranks = GPU bundles sorted driver node first, then node id (ray_utils.py:381);
  one actor per rank, ``num_cpus=0, num_gpus=VLLM_RAY_PER_WORKER_GPUS`` (:241), on its bundle,
  named by build_actor_name (ray_utils.py:333), runtime_env RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1
  (:221); CUDA_VISIBLE_DEVICES = the node's sorted GPU ids, local_rank = index on the node. Its
  monitor thread (:429) waits on every actor's run() ref (ray.wait, timeout 5 s; here 1 s, which only
  bounds how fast a stop is seen) and logs :465 when one ends; the engine core then raises
  "Executor failed." (v1/engine/core.py:1299) and logs "EngineCore encountered a fatal error." (:1142).
  The legacy executor has no monitor (ray_executor.py:642: check_health assumes healthy).

The Ray driver runs in a child process, like vLLM's EngineCore (the API server never imports ray):
``Engine`` is the API-server side. When that process ends, /health answers 503 (health.py:33) and the
server stops 5 s later (launcher.py:150-166); vLLM 0.21.0 then exits 0 (nothing raises on that path;
vllm-project/vllm#48966), so VOLTA_LAB_ENGINE_DEAD_EXIT sets the status for a lab that wants another.
Env read: RAY_ADDRESS and RAY_AUTH_* (by ray.init), VLLM_USE_RAY_V2_EXECUTOR_BACKEND,
VLLM_RAY_PER_WORKER_GPUS, VLLM_HOST_IP (legacy pin), VLLM_KEEP_ALIVE_ON_ENGINE_DEATH,
VOLTA_LAB_RAY_PG_WAIT_TIMEOUT, VOLTA_LAB_ENGINE_DEAD_EXIT. Module-level imports: the standard library.
"""

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import threading
import time
import traceback
import uuid

from vllm._volta_lab import log

PG_WAIT_TIMEOUT = 1800  # vllm/v1/executor/ray_utils.py:29
WATCHDOG_SECONDS = 5.0  # vllm/entrypoints/launcher.py:150 VLLM_WATCHDOG_TIME_S
# vllm/v1/engine/exceptions.py:13
ENGINE_DEAD_MESSAGE = "EngineCore encountered an issue. See stack trace (above) for the root cause."
NOSET_ENV = {"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"}  # platforms/cuda.py ray_noset_device_env_vars


class EngineStartError(Exception):
    """The engine core process exited before it was ready (its error is logged already)."""


# -- pure logic (tests/unit/lab/test_vllm_ray_standin.py) -----------------------------------------
def sizes(args):
    """(tp, pp, pcp, world_size) of parsed serve *args*: world = pp * tp * pcp (config/parallel.py:762)."""
    tp, pp, pcp = (int(args.get(k) or 1) for k in
                   ("tensor_parallel_size", "pipeline_parallel_size", "prefill_context_parallel_size"))
    return tp, pp, pcp, tp * pp * pcp


def use_v2(env):
    return bool(int(env.get("VLLM_USE_RAY_V2_EXECUTOR_BACKEND", "1")))  # envs.py:786


def config_error(args, ray_found):
    """ParallelConfig's verdict for the ray backend (config/parallel.py:885, :939), or None."""
    if int(args.get("nnodes") or 1) > 1:
        return "nnodes > 1 can only be set when distributed executor backend is mp, uni or external_launcher."
    if not ray_found:  # ray_utils.py:270, the missing space is vLLM's
        return "Failed to import Ray: No module named 'ray'.Please install Ray with `pip install ray`."
    return None


def bundle_specs(world, pin_ip=None):
    specs = [{"GPU": 1.0} for _rank in range(world)]
    if pin_ip:
        specs[0][f"node:{pin_ip}"] = 0.001
    return specs


def rank_position(rank, tp, pp):
    """(tp rank, pipeline stage) of *rank*, as build_actor_name numbers them."""
    return rank % tp, (rank // tp) % pp


def actor_name(instance_id, rank, tp, pp, pcp=1):
    name = f"vllm_Worker_{instance_id}"
    name += f"_TP{rank % tp}" if tp > 1 else ""
    name += f"_PP{(rank // tp) % pp}" if pp > 1 else ""
    return name + (f"_PCP{rank // (tp * pp)}" if pcp > 1 else "")


def driver_first(bundles, driver_node):
    """[(bundle index, node id, node ip)] with GPU, driver node first, then by node id (stable)."""
    return sorted(bundles, key=lambda b: (0 if b[1] == driver_node else 1, b[1]))


def local_ranks(node_gpus):
    """[(local_rank, CUDA_VISIBLE_DEVICES)] per worker from its [(node id, gpu ids)], as V2 sets them."""
    by_node = {}
    for node, gpus in node_gpus:
        by_node.setdefault(node, []).extend(int(g) for g in gpus)
    seen = {}
    out = []
    for node, _gpus in node_gpus:
        out.append((seen.get(node, 0), ",".join(str(g) for g in sorted(by_node[node]))))
        seen[node] = seen.get(node, 0) + 1
    return out


def waiting_message(seconds, specs):
    return (f"Waiting for creating a placement group of specs for {seconds} seconds. specs={specs}. Check "
            "`ray status` and `ray list nodes` to see if you have enough resources, and make sure the IP "
            "addresses used by ray cluster are the same as VLLM_HOST_IP environment variable specified in "
            "each node if you are running on a multi-node.")


def pg_timeout_error(specs, timeout):
    gpus = sum(s.get("GPU", 0) for s in specs)
    if gpus > 1:
        return (f"Cannot provide a placement group requiring {gpus} GPUs (placement_group_specs={specs}) "
                f"within {timeout} seconds.\nTensor parallel size may exceed available GPUs in your cluster. "
                "Check resources with `ray status` and `ray list nodes`.\nIf running on K8s with limited "
                "GPUs, consider reducing --tensor-parallel-size to match available GPU resources.")
    return (f"Cannot provide a placement group of placement_group_specs={specs} within {timeout} seconds. "
            "See `ray status` and `ray list nodes` to make sure the cluster has enough resources.")


def spread_warning(tp, bundles, node):
    return (f"tensor_parallel_size={tp} is bigger than a reserved number of GPUs ({bundles} GPUs) in a node "
            f"{node}. Tensor parallel workers can be spread out to 2+ nodes which can degrade the performance "
            "unless you have fast interconnect across nodes, like Infiniband. To resolve this issue, make "
            f"sure you have more than {tp} GPUs available at each node.")


def get_ip(env):
    """vllm/utils/network_utils.py:33: VLLM_HOST_IP, else the source address towards 8.8.8.8."""
    if env.get("VLLM_HOST_IP"):
        return env["VLLM_HOST_IP"]
    for family, dest in ((socket.AF_INET, "8.8.8.8"), (socket.AF_INET6, "2001:4860:4860::8888")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((dest, 80))
                return s.getsockname()[0]
        except OSError:
            pass
    return "0.0.0.0"  # noqa: S104  vLLM's fallback value, not a bind


# -- engine core process (the Ray driver) ---------------------------------------------------------
def wait_until_pg_ready(ray, pg, specs, timeout):
    """ray_utils.py:442: wait in doubling intervals from 10 s while under *timeout*, then ValueError."""
    start = time.time()
    ref = pg.ready()
    interval = 10
    while time.time() - start < timeout:
        ready, _pending = ray.wait([ref], timeout=interval)
        if ready:
            break
        interval *= 2
        log.info("ray_utils.py:464", waiting_message(int(time.time() - start), specs))
    try:
        ray.get(ref, timeout=0)
    except ray.exceptions.GetTimeoutError:
        raise ValueError(pg_timeout_error(specs, timeout)) from None


def create_placement_group(ray, world, v2):
    from ray._private.state import available_resources_per_node

    log.info("ray_utils.py:621", "No current placement group found. Creating a new placement group.")
    if world > ray.cluster_resources().get("GPU", 0):
        log.warning("ray_utils.py:628", "The number of required GPUs exceeds the total number of available "
                    "GPUs in the placement group.")
    pin_ip = None
    if not v2:
        ip, node = get_ip(os.environ), ray.get_runtime_context().get_node_id()
        have = available_resources_per_node()[node]
        if have.get("GPU", 0) < 1:
            raise ValueError(f"Current node has no GPU available. current_node_resource={have}. vLLM engine "
                             "cannot start without GPU. Make sure you have at least 1 GPU available in a node "
                             f"current_node_id={node!r} current_ip={ip!r}.")
        pin_ip = ip
    specs = bundle_specs(world, pin_ip)
    pg = ray.util.placement_group(specs, strategy="PACK")
    timeout = float(os.environ.get("VOLTA_LAB_RAY_PG_WAIT_TIMEOUT", PG_WAIT_TIMEOUT))
    try:
        wait_until_pg_ready(ray, pg, specs, int(timeout) if timeout.is_integer() else timeout)
    except ValueError:
        ray.util.remove_placement_group(pg)  # vLLM leaves the pending group to Ray's cleanup of its job
        raise
    return pg


class Worker:
    """What a RayWorkerProc actor tells the driver; run() stands for its busy loop (until killed)."""

    def where(self):
        import ray

        return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), ray.get_gpu_ids()

    def run(self):
        threading.Event().wait()


def start_workers(ray, pg, tp, pp, pcp, world):
    from ray.util.placement_group import placement_group_table
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    driver = ray.get_runtime_context().get_node_id()
    table = placement_group_table(pg)["bundles_to_node_id"]
    ips = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
    order = driver_first([(i, table[i], ips[table[i]]) for i in range(world)], driver)
    per_node = {}
    for _i, node, _ip in order:
        per_node[node] = per_node.get(node, 0) + 1
    for node, count in per_node.items():  # _verify_bundles, ray_utils.py:316
        if count < tp:
            log.warning("ray_utils.py:316", spread_warning(tp, count, node))
    instance, gpus = uuid.uuid4().hex[:5], float(os.environ.get("VLLM_RAY_PER_WORKER_GPUS", "1.0"))
    actors = []
    for rank, (bundle, _node, _ip) in enumerate(order):
        strategy = PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=bundle)
        actors.append(ray.remote(Worker).options(
            name=actor_name(instance, rank, tp, pp, pcp), num_cpus=0, num_gpus=gpus,
            scheduling_strategy=strategy, runtime_env={"env_vars": dict(NOSET_ENV)}).remote())
    return actors, ray.get([a.where.remote() for a in actors]), instance


def log_workers(placed, tp, pp, pcp, instance, where):
    """One line per actor and a summary (the stand-in's own lines: real vLLM logs these at DEBUG only)."""
    nodes = {}
    for rank, ((node, ip, gpus), (lrank, cvd)) in enumerate(zip(placed, local_ranks(
            [(n, g) for n, _ip, g in placed]), strict=True)):
        tp_rank, stage = rank_position(rank, tp, pp)
        log.info(where, (
            f"volta lab: Ray worker rank={rank} (PP stage {stage}, TP rank {tp_rank}) "
            f"actor {actor_name(instance, rank, tp, pp, pcp)} on node {ip} ({node[:8]}), GPU ids {gpus}, "
            f"local_rank={lrank}, CUDA_VISIBLE_DEVICES={cvd}"))
        nodes.setdefault((ip, node[:8]), []).append(rank)
    spread = "; ".join(f"{ip} ({node}): ranks {ranks}" for (ip, node), ranks in nodes.items())
    log.info(where, f"volta lab: {len(placed)} Ray workers (TP {tp} x PP {pp}) on {len(nodes)} node(s): {spread}")


def monitor(ray, actors, placed, conn):
    """Wait on every actor's run() (ray_executor_v2.py:429) until one ends or the API server says stop.
    Returns the exit status of the engine core: 0 on stop, 1 when a worker died."""
    refs = [a.run.remote() for a in actors]
    while True:
        try:
            done, _pending = ray.wait(refs, num_returns=1, timeout=1.0)
        except Exception:  # as vLLM (:452): the monitor ends, the engine runs on
            log.error("ray_executor_v2.py:452", "RayWorkerMonitor: unexpected error, exiting monitor thread")
            return wait_for_stop(conn)
        if done:
            break
        if conn.poll():
            return 0
    ranks = [refs.index(r) for r in done]
    try:
        ray.get(done[0], timeout=1)
        why = "run() returned"
    except Exception as exc:  # ActorDiedError, ActorUnavailableError, ...
        why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1].strip()}"
    lost = ", ".join(f"rank {r} on node {placed[r][1]} ({placed[r][0][:8]})" for r in ranks)
    log.error("ray_executor_v2.py:465", f"RayWorkerProc rank={ranks} died unexpectedly, shutting down "
              f"executor. (volta lab: {lost}: {why})")
    log.error("core.py:1142", "EngineCore encountered a fatal error.\nRuntimeError: Executor failed.")
    return 1


def cleanup(ray, actors, pg):
    """Kill the actors (ray_executor_v2.py:513) and remove the placement group. Real vLLM leaves the
    group to Ray, which removes it with its job; bounded, since a dead GCS makes these calls hang."""
    def work():
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: S110  as vLLM: a failed kill is only logged at debug
                pass
        if pg is not None:
            ray.util.remove_placement_group(pg)
            log.info("ray_cluster.py:1", "volta lab: removed the placement group")

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(10)


def device_count_warning(world):
    """ray_utils.py:557: the driver host's own GPU count (the torch stand-in's, when it has CUDA)."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    count = cuda.device_count() if cuda is not None and cuda.is_available() else world
    if world > 1 and world > count:
        log.warning("ray_utils.py:557", (
            f"Tensor parallel size ({world}) exceeds available GPUs ({count}). This may result in Ray "
            f"placement group allocation failures. Consider reducing tensor_parallel_size to {count} or "
            f"less, or ensure your Ray cluster has {world} GPUs available."))


def wait_for_stop(conn):
    try:
        conn.recv()
    except EOFError:
        pass  # the API server is gone
    return 0


def engine_core(args, conn, server_fd):
    """The child process: connect, place, start, report, watch. Exits 1 on failure, like EngineCore."""
    os.close(server_fd)  # the API server's socket stays the API server's
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the API server, which stops us
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: do not outlive the API server
    log.PREFIX = f"(EngineCore pid={os.getpid()}) "
    tp, pp, pcp, world = sizes(args)
    v2, actors, pg, rc = use_v2(os.environ), [], None, 1
    try:
        import ray

        device_count_warning(world)
        ray.init(address=None, runtime_env=None)  # ray_utils.py:584
        pg = create_placement_group(ray, world, v2)
        actors, placed, instance = start_workers(ray, pg, tp, pp, pcp, world)
        log_workers(placed, tp, pp, pcp, instance, "ray_executor_v2.py:1" if v2 else "ray_executor.py:1")
    except Exception as exc:  # logged like EngineCore, then the process exits 1
        log.error("core.py:1140", "EngineCore failed to start.")
        log.raw("".join(traceback.format_exception_only(exc)))
    else:
        conn.send("ready")
        rc = monitor(ray, actors, placed, conn) if v2 else wait_for_stop(conn)
    finally:
        if "ray" in sys.modules:
            cleanup(sys.modules["ray"], actors, pg)
        sys.stdout.flush()
        os._exit(rc)


# -- API server side -------------------------------------------------------------------------------
class Engine:
    """The engine core process as the API server sees it (vllm/v1/engine/core_client.py)."""

    def __init__(self, args, server_fd):
        ctx = multiprocessing.get_context("fork")  # before any thread: the server has not started
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=engine_core, args=(args, child, server_fd), name="EngineCore",
                                daemon=True)
        self.proc.start()
        child.close()
        self.stopping = False
        self.dead = False

    def wait_ready(self):
        try:
            if self.conn.recv() == "ready":
                return
        except EOFError:
            pass
        self.proc.join()
        raise EngineStartError("RuntimeError: Engine core initialization failed. See root cause above. "
                               f"Failed core proc(s): {{'EngineCore': {self.proc.exitcode}}}")  # utils.py:1188

    def watch(self, state, srv):
        """MPClientEngineMonitor + the launcher's watchdog: on engine death, /health answers 503 and,
        unless VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1 (envs.py:907), the server stops WATCHDOG_SECONDS later."""
        def run():
            multiprocessing.connection.wait([self.proc.sentinel])  # not join(): stop() reaps it
            if self.stopping:
                return
            self.dead = state.engine_dead = True
            log.error("async_llm.py:704", "AsyncLLM output_handler failed.\n"
                      f"vllm.v1.engine.exceptions.EngineDeadError: {ENGINE_DEAD_MESSAGE}")
            if os.environ.get("VLLM_KEEP_ALIVE_ON_ENGINE_DEATH", "0") != "0":
                return
            time.sleep(WATCHDOG_SECONDS)
            log.uvicorn("Shutting down")
            srv.shutdown()

        threading.Thread(target=run, daemon=True, name="MPClientEngineMonitor").start()

    def stop(self):
        """Shutdown: tell the engine core to stop, give it time to clean up. Returns the exit status:
        after an engine death real vLLM 0.21.0 exits 0 (launcher.py:166 only sets should_exit;
        vllm-project/vllm#48966); VOLTA_LAB_ENGINE_DEAD_EXIT sets another."""
        self.stopping = True
        try:
            self.conn.send("stop")
        except OSError:
            pass
        self.proc.join(15)
        if self.proc.is_alive():
            self.proc.kill()
        return int(os.environ.get("VOLTA_LAB_ENGINE_DEAD_EXIT", "0")) if self.dead else 0


def start(args, server_fd):
    """Start the engine core and wait until its workers are placed; raises EngineStartError."""
    engine = Engine(args, server_fd)
    engine.wait_ready()
    return engine
