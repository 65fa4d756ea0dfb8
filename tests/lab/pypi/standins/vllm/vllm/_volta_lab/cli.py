"""`vllm` CLI of the volta.serving test-lab stand-in.

Accepts exactly the options the real `vllm serve` of this version accepts
(flag data derived from the real parser, embedded in build.json) and rejects
the rest the way argparse does (exit 2).  `serve` then checks what the real
server would trip over at start-up (torch present and of the pinned version,
an attention backend vLLM knows, a GPU the torch build supports, one NCCL
wheel for multi-GPU), "loads" for VOLTA_LAB_LOAD_SECONDS (default 3) and
serves the simulator.

Start-up config validation (``scheduler_error``) is recorded from the REAL vLLM 0.21.0 wheel:
vllm/config/scheduler.py (SchedulerConfig.verify_max_model_len: the checks and their wording)
and vllm/engine/arg_utils.py (EngineArgs.get_batch_defaults and
_set_default_max_num_seqs_and_batched_tokens_args: the defaults of `vllm serve` on a CUDA GPU
under 70 GiB, i.e. every V100). Written from those facts, not copied. The 1cat_vllm stand-in
shares this module: assumed to validate like vLLM 0.21.0 (1Cat-vLLM is a fork; not read).
tests/real/test_vllm_argv.py compares it with the real release.

A local model path (absolute) must hold what vLLM 0.21.0's ``get_config``
(vllm/transformers_utils/config.py) looks for before anything loads: a ``config.json``
(or Mistral's ``params.json``), or be a ``.gguf`` file; otherwise it fails with that
function's "Invalid repository ID or local directory specified" error (``model_error``).
Nothing else of the model is read (no weights, no architecture check).

``--distributed-executor-backend ray`` runs the engine over the REAL ``ray`` package
(vllm/_volta_lab/ray_cluster.py, imported only then); without the flag nothing here changes.

Module-level imports are the standard library only, so that tests load this file on its own.
"""

import importlib.metadata
import os
import sys
import time

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
# The simulated model's own context length (what --max-model-len defaults to).
MODEL_LEN = 4096
# vLLM 0.21.0, `vllm serve` (usage context OPENAI_API_SERVER) on CUDA with less than 70 GiB per GPU.
SERVE_DEFAULT_MBT = 2048
SERVE_DEFAULT_SEQS = 256


def _help(build, prog):
    flags = build["flags"]
    out = [f"usage: {flags.get('usage', 'vllm serve [model_tag] [options]')}", "",
           f"volta.serving test-lab stand-in for {build['dist']} {build['version']} "
           "(simulator, not the real vLLM).", "", "options:"]
    seen = set()
    for opt, spec in flags["options"].items():
        key = tuple(spec.get("option_strings") or [opt])
        if key in seen:
            continue
        seen.add(key)
        arg = "" if not spec["takes_value"] else (
            " {" + ",".join(map(str, spec["choices"])) + "}" if spec["choices"]
            else " " + spec["dest"].upper())
        out.append(f"  {', '.join(key)}{arg}")
    print("\n".join(out))
    return 0


def _human_int(value, default):
    if value is None or str(value).lower() == "auto":
        return default
    text = str(value).strip()
    mult = {"k": 1000, "K": 1024, "m": 1000 ** 2, "M": 1024 ** 2, "g": 1000 ** 3,
            "G": 1024 ** 3}
    try:
        if text and text[-1] in mult:
            return int(float(text[:-1]) * mult[text[-1]])
        return int(text)
    except ValueError:
        return default


def _fail(where, exc_line):
    from vllm._volta_lab import log

    log.error(where, exc_line)
    sys.stderr.write(exc_line + "\n")
    return 1


def _int(value, default):
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _scheduler_values(args, model_len):
    """max_model_len, max_num_batched_tokens, max_num_seqs, chunked prefill as vLLM 0.21.0 sets them."""
    max_len = _human_int(args.get("max_model_len"), model_len)
    max_len = model_len if max_len in (None, -1) else max_len
    chunked = args.get("enable_chunked_prefill")
    chunked = True if chunked is None else chunked  # a decoder-only generate model supports it
    factor = 2 if args.get("performance_mode") == "throughput" else 1
    seqs = _int(args.get("max_num_seqs"), None)
    mbt = _human_int(args.get("max_num_batched_tokens"), None)
    if mbt is None:
        mbt = SERVE_DEFAULT_MBT * factor
        if not chunked:
            mbt = max(max_len, mbt)
        mbt = min((seqs or SERVE_DEFAULT_SEQS * factor) * max_len, mbt)
    if seqs is None:
        seqs = min(SERVE_DEFAULT_SEQS * factor, mbt)
    return max_len, mbt, seqs, chunked


def scheduler_error(args, model_len=MODEL_LEN):
    """vLLM 0.21.0's SchedulerConfig verdict on parsed serve *args*: its error text, or None."""
    max_len, mbt, seqs, chunked = _scheduler_values(args, model_len)
    partial = _int(args.get("max_num_partial_prefills"), 1)
    long_partial = _int(args.get("max_long_partial_prefills"), 1)
    threshold = _int(args.get("long_prefill_token_threshold"), 0)
    if partial > 1 and threshold == 0:
        threshold = int(max_len * 0.04)
    if mbt < max_len and not chunked:
        return (f"max_num_batched_tokens ({mbt}) is smaller than max_model_len ({max_len}). This "
                "effectively limits the maximum sequence length to max_num_batched_tokens and makes "
                "vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease "
                "max_model_len.")
    if mbt < seqs:
        return (f"max_num_batched_tokens ({mbt}) must be greater than or equal to max_num_seqs "
                f"({seqs}).")
    if partial > 1 and not chunked:
        return "Chunked prefill must be enabled to set max_num_partial_prefills > 1."
    if partial > 1 and threshold > max_len:
        return (f"long_prefill_token_threshold ({threshold}) cannot be greater than the "
                f"max_model_len ({max_len}).")
    if long_partial > partial:
        return (f"self.max_long_partial_prefills={long_partial} must be less than or equal to "
                f"self.max_num_partial_prefills={partial}.")
    return None


def _attention_check(build, args):
    backends = build.get("attention_backends") or []
    backend = args.get("attention_backend")
    if backend and backends and backend.upper() not in backends:
        return _fail("arg_utils.py:1", (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
            f"AttentionConfig\nbackend\n  Value error, Invalid value '{backend}'. "
            f"Valid options are: {', '.join(backends)}"))
    return 0


def _torch_checks(build):
    try:
        import torch
    except ImportError:
        return _fail("__init__.py:1", "ModuleNotFoundError: No module named 'torch'")
    pin = build.get("torch_pin")
    have = str(getattr(torch, "__version__", "")).split("+", 1)[0]
    if pin and have != pin:
        return _fail("__init__.py:1", (
            f"ImportError: {os.path.dirname(os.path.dirname(__file__))}/_C.abi3.so: "
            "undefined symbol: _ZN3c1013MessageLogger6streamB5cxx11Ev "
            f"(volta lab: this vLLM was built for torch=={pin}, found torch {have})"))
    return 0


def _scheduler_check(args):
    error = scheduler_error(args)
    if error is None:
        return 0
    return _fail("arg_utils.py:1", (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n"
        f"  Value error, {error} [type=value_error]"))


def _gpu_checks(args):
    import torch

    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available():
        major, minor = cuda.get_device_capability()
        arch = f"sm_{major}{minor}"
        if arch not in cuda.get_arch_list():
            return _fail("gpu_worker.py:1", (
                "RuntimeError: CUDA error: no kernel image is available for execution "
                f"on the device (volta lab: {arch} not in torch arch list "
                f"{' '.join(cuda.get_arch_list())})"))
    world = int(args.get("tensor_parallel_size") or 1) * int(args.get("pipeline_parallel_size") or 1)
    if world > 1:
        nccl = sorted({d.metadata["Name"] for d in importlib.metadata.distributions()
                       if (d.metadata["Name"] or "").lower().replace("_", "-").startswith("nvidia-nccl-")})
        if len(nccl) > 1:
            return _fail("pynccl.py:1", (
                "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO "
                f"for details) (volta lab: {len(nccl)} NCCL wheels installed: "
                f"{', '.join(nccl)}; torch.cuda.nccl.version()="
                f"{getattr(getattr(cuda, 'nccl', None), 'version', lambda: None)()})"))
    return 0


def model_error(model):
    """vLLM 0.21.0 get_config's error for a local model path it finds no configuration in, else None."""
    if not str(model).startswith("/"):
        return None  # a hub id: not simulated
    if str(model).endswith(".gguf") and os.path.isfile(model):
        return None
    if os.path.isdir(model) and any(os.path.isfile(os.path.join(model, n)) for n in ("config.json", "params.json")):
        return None
    return (f"ValueError: Invalid repository ID or local directory specified: '{model}'.\n"
            "Please verify the following requirements:\n"
            "1. Provide a valid Hugging Face repository ID.\n"
            "2. Specify a local directory that contains a recognized configuration file.\n"
            "   - For Hugging Face models: ensure the presence of a 'config.json'.\n"
            "   - For Mistral models: ensure the presence of a 'params.json'.")


def _model_check(args):
    error = model_error(args.get("model_tag") or args.get("model") or DEFAULT_MODEL)
    return _fail("config.py:717", error) if error else 0


def _uses_ray(args):
    return args.get("distributed_executor_backend") == "ray"


def _ray_check(args):
    """ParallelConfig's checks of the ray backend (vLLM 0.21.0 vllm/config/parallel.py), without importing ray."""
    if not _uses_ray(args):
        return 0
    import importlib.util

    from vllm._volta_lab import ray_cluster

    error = ray_cluster.config_error(args, importlib.util.find_spec("ray") is not None)
    return _fail("parallel.py:1", (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ParallelConfig\n"
        f"  Value error, {error} [type=value_error]")) if error else 0


def _startup_checks(build, args):
    """What the real server would die of before binding its port, in the order it meets them."""
    skip_torch = os.environ.get("VOLTA_LAB_SKIP_TORCH_CHECK") == "1"
    return (_attention_check(build, args) or (0 if skip_torch else _torch_checks(build))
            or _model_check(args) or _ray_check(args) or _scheduler_check(args)
            or (0 if skip_torch else _gpu_checks(args)))


def _start_engine(args, srv):
    """The ray backend's engine core (vllm._volta_lab.ray_cluster): None without the flag, False if it failed."""
    if not _uses_ray(args):
        return None
    from vllm._volta_lab import ray_cluster

    try:
        return ray_cluster.start(args, srv.fileno())
    except ray_cluster.EngineStartError as exc:
        srv.server_close()
        _fail("core_client.py:1", str(exc))
        return False


def serve_main(argv, mode="serve"):
    from vllm._volta_lab import argv as lab_argv
    from vllm._volta_lab import build_info, log

    build = build_info()
    try:
        args = lab_argv.parse(list(argv), build["flags"], mode)
    except lab_argv.ArgvError as exc:
        sys.stderr.write(exc.render() + "\n")
        return 2
    if args.get("help"):
        return _help(build, mode)

    model = args.get("model_tag") or args.get("model") or DEFAULT_MODEL
    served = args.get("served_model_name") or [model]
    host = args.get("host") or ""
    port = int(args.get("port") or 8000)
    tokens = args.get("api_key") or [os.environ.get("VLLM_API_KEY")]
    max_len = _human_int(args.get("max_model_len"), MODEL_LEN)

    log.info("utils.py:299", f"vLLM server version {build['version']}, serving model {model}")
    shown = {k: v for k, v in args.items() if k not in ("model",)}
    log.info("utils.py:233", f"non-default args: {shown}")
    log.warning("__init__.py:1", (f"volta.serving test-lab stand-in ({build['dist']} "
                                  f"{build['version']}): simulator, no model is loaded"))
    rc = _startup_checks(build, args)
    if rc:
        return rc

    from vllm._volta_lab import server

    try:
        srv = server.bind(host, port)
    except OSError as exc:
        return _fail("api_server.py:1", f"OSError: [Errno {exc.errno}] {exc.strerror}")
    engine = _start_engine(args, srv)
    if engine is False:
        return 1
    delay = float(os.environ.get("VOLTA_LAB_LOAD_SECONDS", "3"))
    log.info("gpu_model_runner.py:1", f"Starting to load model {model}...")
    time.sleep(max(0.0, delay))
    log.info("default_loader.py:1", f"Loading weights took {delay:.2f} seconds")
    log.info("api_server.py:1", "Supported tasks: ['generate']")
    host_part = f"[{host}]" if ":" in host else (host or "0.0.0.0")  # noqa: S104  how vLLM names its default bind
    state = server.State(build, served, model, max_len, tokens)
    if engine is not None:
        engine.watch(state, srv)
    server.serve(srv, state, f"http://{host_part}:{port}")
    return engine.stop() if engine is not None else 0


def main(argv):
    from vllm._volta_lab import build_info

    build = build_info()
    flags = build["flags"]
    subcommands = flags.get("subcommands") or ["serve"]
    top_usage = flags.get("top_usage", "usage: vllm [-h] [-v] {serve} ...")
    if not argv or argv[0] in ("-h", "--help"):
        print(top_usage)
        print(f"\nvLLM CLI (volta.serving test-lab stand-in for {build['dist']} "
              f"{build['version']}; only `serve` is simulated)")
        return 0
    if argv[0] in ("-v", "--version"):
        print(build["version"])
        return 0
    if argv[0] == "serve":
        return serve_main(argv[1:], "serve")
    if argv[0].startswith("-"):
        sys.stderr.write(f"{top_usage}\nvllm: error: unrecognized arguments: {' '.join(argv)}\n")
        return 2
    if argv[0] not in subcommands:
        choices = ", ".join(repr(c) for c in subcommands)
        sys.stderr.write(f"{top_usage}\nvllm: error: argument subparser: invalid choice: "
                         f"{argv[0]!r} (choose from {choices})\n")
        return 2
    sys.stderr.write(f"vllm {argv[0]}: not simulated by the volta.serving test-lab stand-in\n")
    return 2
