"""plugins/module_utils/_model_hub.py against the lab's hub stand-in over real HTTP on loopback.

What preflight reads about a hub model before it is downloaded must be what it reads on the host
after the download: each test compares the two, or asserts the hub's error as the fact carries it.
The stand-in (tests/lab/hub) serves what the real hub publishes (recorded from huggingface_hub).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _model_facts, _model_hub

HUB = Path(__file__).resolve().parents[2] / "lab" / "hub"
sys.path.insert(0, str(HUB))
import hubrepos  # noqa: E402
import hubserver  # noqa: E402

REPO = "volta-lab/tiny-llama"
R1, R2 = (c["oid"] for c in hubserver.REPOS[REPO].commits)
GATED = "volta-lab/tiny-gated"
(G1,) = (c["oid"] for c in hubserver.REPOS[GATED].commits)


@pytest.fixture(autouse=True)
def clean_log():
    hubserver.STATE["log"].clear()


def snapshot(tmp_path, repo, revision):
    """The commit's files written as the model layer leaves them on the host."""
    target = tmp_path / f"m@{revision}"
    for path, content in hubserver.REPOS[repo].resolve(revision)["files"].items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_bytes(content)
    return str(target)


def read(hub, path, repo=REPO, revision=R1, patterns=(), token=None):
    return _model_hub.hub_facts(path, hub, repo, revision, patterns, _model_hub.urllib_reader(token=token, timeout=5))


@pytest.mark.parametrize("revision", [R1, R2])
def test_the_hub_gives_the_facts_the_host_reads_after_download(hub, tmp_path, revision):
    on_host = _model_facts.model_facts(snapshot(tmp_path, REPO, revision))
    from_hub = read(hub, on_host["path"], revision=revision)
    assert from_hub.pop("read_from") == "hub" and on_host.pop("read_from") == "host"
    for key in ("gguf_architecture", "gguf_error"):
        from_hub.pop(key), on_host.pop(key)
    assert from_hub == on_host
    assert from_hub["config"]["num_attention_heads"] == 8
    assert from_hub["weights_from"] == "model.safetensors.index.json"


def test_only_small_files_are_fetched(hub, tmp_path):
    read(hub, str(tmp_path / "m"))
    paths = sorted(e["path"] for e in hubserver.STATE["log"])
    assert paths == sorted([f"/api/models/{REPO}/revision/{R1}", f"/{REPO}/resolve/{R1}/config.json",
                            f"/{REPO}/resolve/{R1}/model.safetensors.index.json",
                            f"/{REPO}/resolve/{R1}/tokenizer_config.json"])


def test_allow_patterns_without_json_leaves_config_json_out(hub, tmp_path):
    facts = read(hub, str(tmp_path / "m"), patterns=["*.safetensors"])
    assert facts["exists"] is True and facts["config"] is None
    assert facts["config_error"] == ("config.json is not among the files the source fetches "
                                     "(allow_patterns *.safetensors)")
    shards = [c for p, c in hubserver.REPOS[REPO].resolve(R1)["files"].items() if p.endswith(".safetensors")]
    assert (facts["weights_bytes"], facts["weights_from"], facts["weight_files"]) == (
        sum(len(c) for c in shards), "files", 2)


@pytest.mark.parametrize(("token", "expected"), [
    (None, "HTTP 401 "),
    ("hf_wrongTokenForTheLabHub0000000000000", "HTTP 401 Invalid credentials in Authorization header"),
])
def test_a_gated_repository_without_access_is_a_hub_error(hub, tmp_path, token, expected):
    facts = read(hub, str(tmp_path / "g"), repo=GATED, revision=G1, token=token)
    assert facts["exists"] is False and facts["read_from"] == "hub"
    assert facts["hub_error"].startswith(f"{GATED}@{G1[:12]}: {expected}")
    assert "gated or private repository needs hf.token" in facts["hub_error"]
    assert "hf_wrong" not in facts["hub_error"]


def test_a_gated_repository_reads_with_the_lab_token(hub, tmp_path):
    facts = read(hub, str(tmp_path / "g"), repo=GATED, revision=G1, token=hubrepos.LAB_TOKEN)
    assert facts["hub_error"] is None and facts["config"]["hidden_size"] == 256
    assert all(e["auth"] for e in hubserver.STATE["log"])


def test_an_unknown_revision_is_a_hub_error(hub, tmp_path):
    facts = read(hub, str(tmp_path / "m"), revision="f" * 40)
    assert facts["hub_error"] == f"{REPO}@ffffffffffff: HTTP 404 Invalid rev id: {'f' * 40} " \
                                 "(no such repository, revision or file)"


def test_an_unreachable_hub_is_a_hub_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    facts = read(f"http://127.0.0.1:{port}", str(tmp_path / "m"))
    assert facts["hub_error"].startswith(f"{REPO}@{R1[:12]}: the hub cannot be reached: ")


def test_a_downloaded_model_is_read_on_the_host_not_from_the_hub(hub, tmp_path):
    path = snapshot(tmp_path, REPO, R1)
    entry = {"path": path, "endpoint": hub, "repo": REPO, "revision": R1, "allow_patterns": [], "token": ""}
    out = _model_hub.gather([path], [entry])
    assert out[path]["read_from"] == "host" and out[path]["exists"]
    assert hubserver.STATE["log"] == []
    missing = dict(entry, path=str(tmp_path / "not-yet"))
    out = _model_hub.gather([path, missing["path"]], [entry, missing])
    assert out[missing["path"]]["read_from"] == "hub" and out[missing["path"]]["config"]["vocab_size"] == 256


def test_preflight_reads_from_the_inventory():
    models = {
        "tiny": {"hf": {"repo": REPO, "revision": R1, "allow_patterns": ["*.json"], "token": "hf_x"}},
        "gguf": {"url": "http://hub/m.gguf", "sha256": "a" * 64},
        "bad": {"hf": {"repo": "no-slash", "revision": R1}},
    }
    instances = [{"name": "a", "model_source": "tiny"}, {"name": "b", "model_source": "tiny"},
                 {"name": "c", "model_source": "gguf"}, {"name": "d", "model": "/srv/m"},
                 {"name": "e", "model_source": "bad"}, {"name": "f", "model_source": "unknown"}, "junk"]
    out = _model_hub.preflight_reads(instances, models, "", "")
    assert out["paths"] == [f"/srv/volta/models/tiny@{R1}", f"/srv/volta/models/tiny@{R1}",
                            f"/srv/volta/models/gguf@{'a' * 12}/m.gguf", "/srv/m"]
    assert out["hub"] == [{"path": f"/srv/volta/models/tiny@{R1}", "endpoint": "https://huggingface.co",
                           "repo": REPO, "revision": R1, "allow_patterns": ["*.json"], "token": "hf_x"}]
    assert out["pending"] == [f"/srv/volta/models/gguf@{'a' * 12}/m.gguf"]
    assert _model_hub.preflight_reads("not a list", models, "/m", "http://mirror") == {
        "paths": [], "hub": [], "pending": []}


def test_a_url_source_not_downloaded_yet_is_pending_not_missing(tmp_path):
    there = tmp_path / "g@aaaaaaaaaaaa" / "there.gguf"
    there.parent.mkdir()
    there.write_bytes(b"GGUF")
    later = str(tmp_path / "g@bbbbbbbbbbbb" / "later.gguf")
    out = _model_hub.gather([str(there), later], pending=[str(there), later])
    assert out[later]["pending"] is True and out[later]["exists"] is False
    assert out[str(there)]["pending"] is False and out[str(there)]["exists"] is True
