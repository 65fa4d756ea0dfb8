"""The lab's Hugging Face Hub stand-in, driven by the REAL huggingface_hub client on loopback.

The client (tests/lab/hub/client_venv.py: the version roles/model pins) runs in its own venv, in a
subprocess, with HF_ENDPOINT pointing at the stand-in; each test asserts what it downloaded and the
requests the stand-in saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HUB = Path(__file__).resolve().parents[2] / "lab" / "hub"
sys.path.insert(0, str(HUB))
import client_venv  # noqa: E402
import hubrepos  # noqa: E402
import hubserver  # noqa: E402

REPO = "volta-lab/tiny-llama"
R1, R2 = (c["oid"] for c in hubserver.REPOS[REPO].commits)
GATED = "volta-lab/tiny-gated"


@pytest.fixture(autouse=True)
def clean_log():
    hubserver.STATE["log"].clear()
    hubserver.STATE["drop"].clear()


def client(hub, tmp_path, code):
    """Run *code* with the real client; it prints one JSON line, returned parsed."""
    env = dict(os.environ, HF_ENDPOINT=hub, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1")
    env.pop("HF_TOKEN", None)
    proc = subprocess.run([str(client_venv.venv() / "bin" / "python"), "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_snapshot_download_at_a_commit_matches_the_published_checksums(hub, tmp_path):
    out = client(hub, tmp_path, f"""
        import json, os
        from huggingface_hub import snapshot_download
        p = snapshot_download("{REPO}", revision="{R1}", local_dir="{tmp_path}/m")
        print(json.dumps(sorted(f for f in os.listdir(p) if not f.startswith(".cache"))))
    """)
    files = hubserver.REPOS[REPO].commits[0]["files"]
    assert out == sorted(files)
    for path, content in files.items():
        assert sha256(tmp_path / "m" / path) == hashlib.sha256(content).hexdigest()
    paths = [(e["method"], e["path"]) for e in hubserver.STATE["log"]]
    # A commit id: no /revision/ call; the tree lists the files; LFS files come from the CDN origin.
    assert ("GET", f"/api/models/{REPO}/tree/{R1}") in paths
    assert not any("/revision/" in path for method, path in paths)
    assert sum(path.startswith("/lfs/") for method, path in paths) == 2


def test_model_info_publishes_lfs_sha256_sizes_and_resolves_a_branch(hub, tmp_path):
    out = client(hub, tmp_path, f"""
        import json
        from huggingface_hub import HfApi
        info = HfApi().model_info("{REPO}", revision="main", files_metadata=True)
        print(json.dumps({{"sha": info.sha, "files": {{s.rfilename: [s.size, s.blob_id, s.lfs.sha256 if s.lfs else None]
                          for s in info.siblings}}}}))
    """)
    assert out["sha"] == R2
    content = hubserver.REPOS[REPO].commits[1]["files"]["model-00001-of-00002.safetensors"]
    size, blob, lfs = out["files"]["model-00001-of-00002.safetensors"]
    assert (size, lfs) == (len(content), hashlib.sha256(content).hexdigest())
    assert blob == hubrepos.git_blob_id(hubrepos.lfs_pointer(content))
    config = hubserver.REPOS[REPO].commits[1]["files"]["config.json"]
    assert out["files"]["config.json"] == [len(config), hubrepos.git_blob_id(config), None]


def test_a_transfer_broken_halfway_resumes_with_a_range_request(hub, tmp_path):
    content = hubserver.REPOS[REPO].commits[1]["files"]["model-00002-of-00002.safetensors"]
    digest = hashlib.sha256(content).hexdigest()
    hubserver.STATE["drop"].add(digest)
    # The client yields a file's bytes in DOWNLOAD_CHUNK_SIZE pieces (10 MiB); with the lab's 2 MiB shards
    # a smaller piece lets it keep the first half before the connection breaks, as a real shard would.
    out = client(hub, tmp_path, f"""
        import json
        from huggingface_hub import constants, hf_hub_download
        constants.DOWNLOAD_CHUNK_SIZE = 64 * 1024
        p = hf_hub_download("{REPO}", "model-00002-of-00002.safetensors", revision="{R2}", local_dir="{tmp_path}/m")
        print(json.dumps(p))
    """)
    assert sha256(out) == digest
    gets = [e for e in hubserver.STATE["log"] if e["path"] == f"/lfs/{digest}"]
    assert len(gets) == 2 and gets[0]["range"] is None
    start = int(gets[1]["range"].removeprefix("bytes=").rstrip("-"))
    assert 0 < start < len(content)


@pytest.mark.parametrize(
    ("token", "expect"),
    [
        (None, "GatedRepoError"),
        ("hf_wrongWrongWrong", "Invalid credentials in Authorization header"),
    ],
)
def test_the_gated_repository_refuses_without_the_lab_token(hub, tmp_path, token, expect):
    out = client(hub, tmp_path, f"""
        import json
        from huggingface_hub import snapshot_download
        try:
            snapshot_download("{GATED}", revision="main", local_dir="{tmp_path}/g", token={token!r})
            print(json.dumps("downloaded"))
        except Exception as exc:
            print(json.dumps(type(exc).__name__ + ": " + str(exc) + " " + str(getattr(exc, "server_message", ""))))
    """)
    assert expect in out
    assert not (tmp_path / "g" / "config.json").exists()
    assert any(e["auth"] == (token is not None) for e in hubserver.STATE["log"])


def test_the_gated_repository_downloads_with_the_lab_token(hub, tmp_path):
    out = client(hub, tmp_path, f"""
        import json, os
        from huggingface_hub import snapshot_download
        p = snapshot_download("{GATED}", revision="main", local_dir="{tmp_path}/g", token="{hubrepos.LAB_TOKEN}")
        print(json.dumps(open(os.path.join(p, "config.json")).read()))
    """)
    assert json.loads(out)["volta_lab_revision"] == "g1"
    # The token goes to the hub only; the client never forwards it to the CDN (another origin).
    hub_side = [e for e in hubserver.STATE["log"] if not e["path"].startswith("/lfs/")]
    cdn_side = [e for e in hubserver.STATE["log"] if e["path"].startswith("/lfs/")]
    assert hub_side and all(e["auth"] for e in hub_side)
    assert cdn_side and not any(e["auth"] for e in cdn_side)


def test_an_unknown_revision_is_revision_not_found(hub, tmp_path):
    out = client(hub, tmp_path, f"""
        import json
        from huggingface_hub import HfApi
        try:
            HfApi().model_info("{REPO}", revision="{'0' * 40}")
        except Exception as exc:
            print(json.dumps(type(exc).__name__))
    """)
    assert out == "RevisionNotFoundError"


def test_the_gguf_repository_serves_the_given_file_as_lfs():
    gguf = b"GGUF" + bytes(range(256)) * 4
    repo = hubrepos.build_repos(gguf)[hubrepos.GGUF_REPO]
    files = repo.commits[0]["files"]
    assert files[hubrepos.GGUF_FILE] == gguf and repo.refs["main"] == repo.commits[0]["oid"]
    published = hubrepos.entry(hubrepos.GGUF_FILE, gguf)
    assert published["lfs"]["oid"] == hashlib.sha256(gguf).hexdigest() and published["size"] == len(gguf)
    # The same bytes give the same commit (scenarios pin it); other bytes another one.
    assert hubrepos.build_repos(gguf)[hubrepos.GGUF_REPO].commits[0]["oid"] == repo.commits[0]["oid"]
    assert hubrepos.build_repos(gguf + b"\0")[hubrepos.GGUF_REPO].commits[0]["oid"] != repo.commits[0]["oid"]


def test_without_a_built_gguf_there_is_no_gguf_repository():
    assert hubrepos.GGUF_REPO not in hubrepos.build_repos()
    assert hubrepos.GGUF_REPO not in hubrepos.build_repos(None)


def test_a_running_hub_arms_a_broken_transfer_on_request(hub):
    import urllib.request

    digest = "ab" * 32
    with urllib.request.urlopen(f"{hub}/_lab/drop-once/{digest}") as answer:  # noqa: S310  the lab hub on loopback
        assert json.load(answer) == {"drop_once": [digest]}
    assert digest in hubserver.STATE["drop"]
