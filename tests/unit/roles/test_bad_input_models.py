# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad input of the model layer: playbooks/site.yml on the controller (volta_preflight_detect=false).

Each host makes one mistake with its models (volta_models, model_source, model_hf_endpoint, a token), one
host makes none; the hosts refused by the same preflight check share one run (STAGES). Every mistake must
stop the run in preflight, before any host is changed, with host, variable, why and fix; no token may appear
in the output. The good host reads its model from a hub on loopback that redirects the files to a second
loopback port, as huggingface.co redirects to its CDN: the hub must get the token, the second host must not.
No network except loopback: every other hub address is a closed local port or is refused before any
connection.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = REPO / ".venv" / "bin" / "ansible-playbook"
# As tests/unit/roles/test_preflight_controller.py: one instance, its key, the networks, a closed index.
SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 8, "compute_capability": "7.0",
          "nvlink_islands": [], "ram_gb": 251}  # fmt: skip
KEY = "controller-test-key-not-a-secret-0123456789"
COMMON = {"ansible_connection": "local", "firewall_api_cidrs": ["10.0.0.0/8"], "firewall_ssh_cidrs": ["10.0.0.0/8"],
          "engine_pypi_index_url": "http://127.0.0.1:9/simple"}  # fmt: skip
REVISION = "0123456789abcdef0123456789abcdef01234567"
GOOD_TOKEN = "hf_good_host_token_not_a_secret_0123456789"  # noqa: S105 - a test value, not a token
PLAIN_TOKEN = "hf_plain_http_token_not_a_secret_987654321"  # noqa: S105 - a test value, not a token
CLOSED = "http://127.0.0.1:9"  # the discard port: a hub read fails at once
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": 8,
          "num_key_value_heads": 8, "hidden_size": 1024, "num_hidden_layers": 4, "torch_dtype": "float16",
          "max_position_embeddings": 4096}  # fmt: skip
INFO = {"siblings": [{"rfilename": "config.json", "size": 200},
                     {"rfilename": "model.safetensors", "size": 2_000_000, "lfs": {"size": 2_000_000}}]}  # fmt: skip


class _Recorder(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.seen.append({"path": self.path, "authorization": self.headers.get("Authorization")})
        status, headers, body = self.server.routes(self.path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def _serve(routes):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen, server.routes = [], routes
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def _url(server):
    return f"http://127.0.0.1:{server.server_address[1]}"


def chat(**changes):
    return {"name": "chat", "engine": "vllm", "model": "/srv/models/chat", "gpus": [0], "port": 8001, **changes}


def host(instances=None, **variables):
    return {**COMMON, "volta_server": SERVER, "volta_instances": instances or [chat()],
            "api_gateway_keys": {"chat": KEY}, **variables}  # fmt: skip


def run_site(tmp_path, inventory):
    env = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_INJECT_FACT_VARS": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}  # fmt: skip
    command = [str(ANSIBLE_PLAYBOOK), str(REPO / "playbooks" / "site.yml"), "-i", str(inventory),
               "-e", "volta_preflight_detect=false"]  # fmt: skip
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def hf(repo="Qwen/Qwen3-8B", revision=REVISION, **more):
    return {"hf": {"repo": repo, "revision": revision, **more}}


def sourced(models, ref="qwen", **variables):
    """A host whose one instance serves model_source *ref* of *models* (the hub: a closed local port)."""
    inst = {k: v for k, v in chat(model_source=ref).items() if k != "model"}
    return host([inst], volta_models=models, **{"model_hf_endpoint": CLOSED, **variables})


def hosts(hub):
    """Each host's one mistake; the good host reads its model from the loopback *hub* with a token."""
    return {
        "good": sourced({"qwen": hf("org/tiny", token=GOOD_TOKEN)}, model_hf_endpoint=_url(hub)),
        # Refused by the first check (the shape of the plan's inputs): preflight stops every host there.
        "modellist": sourced([{"qwen": hf()}]),
        "modelstring": sourced({"qwen": "Qwen/Qwen3-8B"}),
        "ccnull": host(volta_server={**SERVER, "compute_capability": None}),
        # Refused by the serving plan's check, after the models were read.
        "modelsnull": sourced(None),
        "plainhttp": sourced({"qwen": hf(token=PLAIN_TOKEN)}, model_hf_endpoint="http://hf-mirror.example"),
        "notaurl": sourced({"qwen": hf()}, model_hf_endpoint="hf-mirror.example"),
        "sourcelist": sourced({"qwen": hf()}, ref=["qwen"]),
        "unknownsource": sourced({"qwen": hf()}, ref="qwen3"),
        "branch": sourced({"qwen": hf(revision="main")}),
        "revisionnumber": sourced({"qwen": hf(revision=1234)}),
        "patterns": sourced({"qwen": hf(allow_patterns="*.safetensors")}),
        "nosha": sourced({"qwen": {"url": "https://example.org/m/qwen.gguf"}}),
        "relpath": sourced({"qwen": {"path": "models/qwen"}}),
    }


# Preflight runs with any_errors_fatal: a host refused by one of its checks stops every host at that task,
# before the others reach the next check. So one run per check, each with the good host: the shape of the
# plan's inputs, every setting the host sets (the settings action), then the serving plan's rules.
STAGES = {
    "settings": ("modellist", "modelsnull", "notaurl"),
    "shape": ("modelstring", "ccnull"),
    "plan": ("plainhttp", "sourcelist", "unknownsource", "branch", "revisionnumber", "patterns", "nosha", "relpath"),
}


EXPECTED = {
    # The settings check (types against the argument specs) or the shape check: whichever runs first names it.
    "modellist": ["modellist: volta_models: ", ("got a list of 1 item", "is not a mapping"),
                  ("Fix: write each model as a key of volta_models, without the '- ' of a list item",
                   "Fix: write volta_models as a YAML mapping"), "{hf: {repo: "],
    # volta_models may hold tokens: the settings check, which runs first, shows no value of it.
    "modelstring": ["modelstring: volta_models.qwen: expected a source (a mapping with one of hf, url or path), got "
                    "the string", ("'Qwen/Qwen3-8B'", '"(not shown: a secret)"'),
                    "Fix: write volta_models.qwen as {hf: {repo: ORG/NAME, revision: <40-hex commit>}}"],
    "modelsnull": ["modelsnull: volta_models: is empty (null", "Fix: write volta_models as a mapping"],
    "plainhttp": ["plainhttp: host-wide: field model_hf_endpoint: model_hf_endpoint 'http://hf-mirror.example' is "
                  "plain http to a host other than this machine, and volta_models qwen send a token (hf.token) to it. "
                  "Why: the token goes in an Authorization header with every hub read",
                  "Fix: use the https address of the hub or mirror (https://huggingface.co is the default), or a "
                  "mirror on the host itself (http://127.0.0.1:PORT)"],
    "notaurl": ["notaurl: model_hf_endpoint: \"hf-mirror.example\" is not an http:// or https:// URL. Fix: set "
                "model_hf_endpoint to an http:// or https:// URL"],
    "sourcelist": ["sourcelist: serving_plan: instance chat: model_source ['qwen'] is not a model name; it names one "
                   "entry of volta_models (known: qwen); fix: write model_source: <name>, e.g. model_source: qwen"],
    "unknownsource": ["unknownsource: serving_plan: instance chat: model_source 'qwen3' is not in volta_models; "
                      "known: qwen; fix: add it to volta_models or correct it"],
    "branch": ["branch: serving_plan: model qwen: hf.revision is 'main', not a commit id; a branch or tag moves",
               "fix: pin the 40-hex commit"],
    "revisionnumber": ["revisionnumber: serving_plan: model qwen: hf.revision is '1234', not a commit id"],
    "patterns": ["patterns: serving_plan: model qwen: hf.allow_patterns is not a list of glob patterns; it filters "
                 "the repository's files; fix: write allow_patterns: ['*.safetensors', '*.json']"],
    "nosha": ["nosha: serving_plan: model qwen: sha256 is missing or not 64 hex digits; every download is verified "
              "by its sha256; fix: add sha256:"],
    "relpath": ["relpath: serving_plan: model qwen: path 'models/qwen' is not absolute; the engine runs from /; "
                "fix: write path: /srv/..."],
    "ccnull": ["ccnull: volta_server.compute_capability: expected a string such as \"7.0\", got nothing (not set, or "
               "null). Fix: set compute_capability: \"7.0\" for V100."],
}


@pytest.fixture(scope="module")
def hub_and_cdn():
    """A hub on loopback that answers the model's information and redirects every file to a second port."""
    cdn = _serve(lambda path: (200, {"Content-Type": "application/json"}, json.dumps(CONFIG).encode()))

    def hub_routes(path):
        if path.startswith("/api/models/"):
            return 200, {"Content-Type": "application/json"}, json.dumps(INFO).encode()
        return 302, {"Location": f"{_url(cdn)}/cdn{path}"}, b""

    hub = _serve(hub_routes)
    yield hub, cdn
    for server in (hub, cdn):
        server.shutdown()
        server.server_close()


def run_stage(tmp_path_factory, hub, names):
    tmp_path = tmp_path_factory.mktemp("models")
    inventory = tmp_path / "hosts.yml"
    chosen = {name: given for name, given in hosts(hub).items() if name in ("good", *names)}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": chosen}}))
    return run_site(tmp_path, inventory)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, hub_and_cdn):
    """(names, rc, output) of each stage's run."""
    return [(names, *run_stage(tmp_path_factory, hub_and_cdn[0], names)) for names in STAGES.values()]


def output_of(runs, name):
    (rc, out), = [(rc, out) for names, rc, out in runs if name in names]
    return rc, out


def test_every_mistake_has_a_stage():
    assert sorted(n for names in STAGES.values() for n in names) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_model_mistake_is_named_in_preflight(runs, name):
    rc, out = output_of(runs, name)
    flat = " ".join(out.split())
    assert rc != 0
    for text in EXPECTED[name]:  # a fragment, or a tuple of fragments of which one must be there
        assert any(one in flat for one in ((text,) if isinstance(text, str) else text)), (name, text, out[-6000:])


@pytest.mark.parametrize("stage", range(len(STAGES)))
def test_every_host_fails_but_the_good_one_and_nothing_changes(runs, stage):
    names, _rc, out = runs[stage]
    recap = dict(re.findall(r"^(\S+)\s+: ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=(\d+)", out, re.M))
    assert recap.pop("good") == "0", out[-6000:]
    assert recap == dict.fromkeys(names, "1"), recap
    for play in ("PLAY [Check every layer's settings", "PLAY [Driver and CUDA toolkit]", "PLAY [Models"):
        assert play not in out


def test_no_crash_no_internals_and_no_token_printed(runs):
    for _names, _rc, out in runs:
        for text in ("Traceback", "_AnsibleTagged", "unhashable type", "is of type list and we were unable",
                     "NoneType", GOOD_TOKEN, PLAIN_TOKEN):
            assert text not in out, text


def test_the_token_reaches_the_hub_but_not_the_host_it_redirects_to(runs, hub_and_cdn):
    hub, cdn = hub_and_cdn
    assert hub.seen and cdn.seen, "the good host's model was not read from the loopback hub"
    assert {s["authorization"] for s in hub.seen} == {f"Bearer {GOOD_TOKEN}"}
    assert {s["authorization"] for s in cdn.seen} == {None}
    assert any(s["path"].endswith("/config.json") for s in cdn.seen)
