"""OpenAI-compatible server SIMULATOR of the volta.serving test-lab vLLM stand-in.

Standard library only.  It answers the endpoints the lab's roles and checks
use, with vLLM's authentication rule (Bearer token checked on /v1 paths only),
and fake, deterministic completions.  It runs no model.
"""

import hmac
import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from vllm._volta_lab import log


class State:
    def __init__(self, build, served, model, max_model_len, tokens):
        self.build = build
        self.served = served
        self.model = model
        self.max_model_len = max_model_len
        self.tokens = [t for t in tokens if t]
        self.lock = threading.Lock()
        self.running = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = {}
        self.started = int(time.time())
        self.engine_dead = False  # set by the ray backend's engine monitor (ray_cluster.Engine.watch)

    def count(self, prompt, completion, reason):
        with self.lock:
            self.prompt_tokens += prompt
            self.generation_tokens += completion
            self.success[reason] = self.success.get(reason, 0) + 1


def _words(text):
    return [w for w in str(text).split() if w]


def _message_text(messages):
    last = ""
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") == "user":
            content = msg.get("content", "")
            if isinstance(content, list):
                content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            last = str(content)
    return last


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""
    state = None  # set by make_server

    # -- plumbing ---------------------------------------------------------
    def log_message(self, fmt, *args):  # uvicorn-style access log is ours
        pass

    def _access(self, code):
        phrase = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                  405: "Method Not Allowed", 500: "Internal Server Error",
                  503: "Service Unavailable"}.get(code, "")
        log.uvicorn(f'{self.client_address[0]}:{self.client_address[1]} - '
                    f'"{self.command} {self.path} {self.request_version}" {code} {phrase}')

    def _send(self, code, body=b"", ctype="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        if body or ctype == "application/json":
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-request-id", uuid.uuid4().hex)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._access(code)

    def _error(self, code, message, etype, param=None):
        self._send(code, {"error": {"message": message, "type": etype,
                                    "param": param, "code": code}})

    def _authorised(self):
        path = self.path.split("?", 1)[0]
        if not self.state.tokens or self.command == "OPTIONS" or not path.startswith("/v1"):
            return True
        scheme, _sep, param = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        ok = False
        for token in self.state.tokens:
            ok |= hmac.compare_digest(param.encode(), token.encode())
        return ok

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def _dispatch(self):
        if not self._authorised():
            self._send(401, {"error": "Unauthorized"})
            return
        path = self.path.split("?", 1)[0]
        routes = {
            ("GET", "/health"): self.health, ("GET", "/ping"): self.health,
            ("POST", "/ping"): self.health,
            ("GET", "/version"): self.version, ("GET", "/metrics"): self.metrics,
            ("GET", "/v1/models"): self.models,
            ("POST", "/v1/chat/completions"): self.chat,
            ("POST", "/v1/completions"): self.completions,
        }
        handler = routes.get((self.command, path))
        # vLLM 0.21.0 mounts its Prometheus app with path_regex ^/metrics(?P<path>.*)$
        # (vllm/entrypoints/serve/instrumentator/metrics.py): /metrics/, /metricsX, /metrics/../x
        # are all metrics, for every method, outside /v1 so without vLLM's key.
        if handler is None and path.startswith("/metrics"):
            handler = self.metrics
        if handler is None:
            if any(p == path for (_method, p) in routes):
                self._send(405, {"detail": "Method Not Allowed"})
            else:
                self._send(404, {"detail": "Not Found"})
            return
        handler()

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    # -- endpoints --------------------------------------------------------
    def health(self):
        # vLLM 0.21.0 vllm/entrypoints/serve/instrumentator/health.py:33: EngineDeadError -> 503
        self._send(503 if self.state.engine_dead else 200, b"", ctype="application/json")

    def version(self):
        self._send(200, {"version": self.state.build["version"]})

    def models(self):
        st = self.state
        data = [{"id": name, "object": "model", "created": st.started, "owned_by": "vllm",
                 "root": st.model, "parent": None, "max_model_len": st.max_model_len,
                 "permission": [{"id": f"modelperm-{uuid.uuid4().hex}",
                                 "object": "model_permission", "created": st.started,
                                 "allow_create_engine": False, "allow_sampling": True,
                                 "allow_logprobs": True, "allow_search_indices": False,
                                 "allow_view": True, "allow_fine_tuning": False,
                                 "organization": "*", "group": None, "is_blocking": False}]}
                for name in st.served]
        self._send(200, {"object": "list", "data": data})

    def metrics(self):
        st = self.state
        lab = f'engine="0",model_name="{st.served[0]}"'
        lines = []

        def metric(name, mtype, help_text, samples):
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {mtype}")
            for labels, value in samples:
                lines.append(f"{name}{{{labels}}} {float(value)}")

        with st.lock:
            metric("vllm:num_requests_running", "gauge",
                   "Number of requests in model execution batches.", [(lab, st.running)])
            metric("vllm:num_requests_waiting", "gauge",
                   "Number of requests waiting to be processed.", [(lab, 0)])
            metric("vllm:kv_cache_usage_perc", "gauge",
                   "KV-cache usage. 1 means 100 percent usage.", [(lab, 0)])
            metric("vllm:prompt_tokens_total", "counter",
                   "Number of prefill tokens processed.", [(lab, st.prompt_tokens)])
            metric("vllm:generation_tokens_total", "counter",
                   "Number of generation tokens processed.", [(lab, st.generation_tokens)])
            metric("vllm:request_success_total", "counter",
                   "Count of successfully processed requests.",
                   [(f'{lab},finished_reason="{r}"', n) for r, n in sorted(st.success.items())]
                   or [(f'{lab},finished_reason="stop"', 0)])
        self._send(200, "\n".join(lines) + "\n", ctype="text/plain; version=0.0.4; charset=utf-8")

    def _check_request(self, key):
        body = self._body()
        if not isinstance(body, dict) or (key and not isinstance(body.get(key), (list, str))):
            self._error(400, f"Invalid request: expected a JSON object with '{key}'",
                        "BadRequestError")
            return None
        model = body.get("model") or self.state.served[0]
        if model not in self.state.served:
            self._error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
            return None
        body["model"] = model
        return body

    def _reply_words(self, prompt, body):
        text = (f"volta.serving test-lab vLLM simulator ({self.state.build['dist']} "
                f"{self.state.build['version']}), not a model. You said: {prompt[:200]}")
        words = _words(text)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        reason = "stop"
        if isinstance(limit, int) and 0 < limit < len(words):
            words, reason = words[:limit], "length"
        return words, reason

    def chat(self):
        body = self._check_request("messages")
        if body is None:
            return
        prompt = _message_text(body["messages"])
        self._generate(body, prompt, chat=True)

    def completions(self):
        body = self._check_request("prompt")
        if body is None:
            return
        prompt = body["prompt"] if isinstance(body["prompt"], str) else " ".join(map(str, body["prompt"]))
        self._generate(body, prompt, chat=False)

    def _generate(self, body, prompt, chat):
        st = self.state
        if st.engine_dead:  # EngineDeadError through create_error_response (vllm/entrypoints/utils.py:351)
            from vllm._volta_lab.ray_cluster import ENGINE_DEAD_MESSAGE

            self._error(500, ENGINE_DEAD_MESSAGE, "InternalServerError")
            return
        words, reason = self._reply_words(prompt, body)
        n_prompt = max(1, len(_words(prompt)))
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        usage = {"prompt_tokens": n_prompt, "total_tokens": n_prompt + len(words),
                 "completion_tokens": len(words), "prompt_tokens_details": None}
        with st.lock:
            st.running += 1
        try:
            if body.get("stream"):
                self._stream(body, rid, created, words, reason, usage, chat)
            else:
                text = " ".join(words)
                if chat:
                    choice = {"index": 0, "message": {"role": "assistant", "content": text,
                                                      "refusal": None, "tool_calls": [],
                                                      "reasoning_content": None},
                              "logprobs": None, "finish_reason": reason, "stop_reason": None}
                else:
                    choice = {"index": 0, "text": text, "logprobs": None,
                              "finish_reason": reason, "stop_reason": None}
                self._send(200, {"id": rid, "object": "chat.completion" if chat else "text_completion",
                                 "created": created, "model": body["model"], "choices": [choice],
                                 "usage": usage, "prompt_logprobs": None})
            st.count(n_prompt, len(words), reason)
        finally:
            with st.lock:
                st.running -= 1

    def _chunk(self, data):
        payload = f"data: {data}\n\n".encode()
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def _stream(self, body, rid, created, words, reason, usage, chat):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("x-request-id", uuid.uuid4().hex)
        self.end_headers()
        delay = float(os.environ.get("VOLTA_LAB_TOKEN_SECONDS", "0.02"))
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(delta_or_text, finish=None):
            if chat:
                choice = {"index": 0, "delta": delta_or_text, "logprobs": None,
                          "finish_reason": finish}
            else:
                choice = {"index": 0, "text": delta_or_text, "logprobs": None,
                          "finish_reason": finish, "stop_reason": None}
            return json.dumps({"id": rid, "object": obj, "created": created,
                               "model": body["model"], "choices": [choice]})

        if chat:
            self._chunk(chunk({"role": "assistant", "content": ""}))
        for n, word in enumerate(words):
            piece = word if n == 0 else " " + word
            self._chunk(chunk({"content": piece} if chat else piece))
            time.sleep(delay)
        self._chunk(chunk({} if chat else "", finish=reason))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._chunk(json.dumps({"id": rid, "object": obj, "created": created,
                                    "model": body["model"], "choices": [], "usage": usage}))
        self._chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self._access(200)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def bind(host, port):
    """Bind early (like vLLM, which grabs the socket before loading the model);
    nothing listens until serve() is called, so clients are refused meanwhile."""
    family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
    Server.address_family = family
    srv = Server((host or "", port), Handler, bind_and_activate=False)
    try:
        srv.server_bind()
    except OSError:
        srv.server_close()
        raise
    return srv


def serve(srv, state, listen_address):
    Handler.state = state
    srv.server_activate()
    log.info("api_server.py:596", f"Starting vLLM server on {listen_address}")
    log.uvicorn(f"Started server process [{os.getpid()}]")
    log.uvicorn("Waiting for application startup.")
    log.uvicorn("Application startup complete.")

    def stop(signum, _frame):
        log.uvicorn("Shutting down")
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()
        log.uvicorn(f"Finished server process [{os.getpid()}]")
    sys.stdout.flush()
