# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volta.serving.model_fetch end to end: main() with the REAL huggingface_hub client against the lab hub.

The client comes from the cached venv of tests/lab/hub/client_venv.py (the version roles/model pins),
appended to sys.path; the hub is tests/lab/hub/hubserver.py on loopback.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.volta.serving.plugins.module_utils import _model
from ansible_collections.volta.serving.plugins.modules import model_fetch

HUB = Path(__file__).resolve().parents[3] / "lab" / "hub"
sys.path.insert(0, str(HUB))
import client_venv  # noqa: E402
import hubrepos  # noqa: E402
import hubserver  # noqa: E402

REPO = "volta-lab/tiny-llama"
R1 = hubserver.REPOS[REPO].commits[0]["oid"]
R2 = hubserver.REPOS[REPO].commits[1]["oid"]
GATED = "volta-lab/tiny-gated"
G1 = hubserver.REPOS[GATED].commits[0]["oid"]
SHARD = "model-00001-of-00002.safetensors"


@pytest.fixture(scope="module")
def hub():
    site = str(client_venv.site_packages())
    sys.path.append(site)
    srv, cdn = hubserver.serve("127.0.0.1", 0, 0)
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    cdn.shutdown()
    sys.path.remove(site)


@pytest.fixture(autouse=True)
def clean(monkeypatch):
    hubserver.STATE["log"].clear()
    monkeypatch.delenv("HF_TOKEN", raising=False)


def fetch(capsys, hub, root, source, name="tiny", check=False, **extra):
    args = {"name": name, "source": source, "root": str(root), "endpoint": hub, "host": "h", **extra}
    if check:
        args["_ansible_check_mode"] = True
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        model_fetch.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def hf(rev, repo=REPO):
    return {"hf": {"repo": repo, "revision": rev, "allow_patterns": ["*.json", "*.safetensors"]}}


def test_fetch_verify_rerun_corrupt_and_keep(capsys, hub, tmp_path):
    rc, out = fetch(capsys, hub, tmp_path, hf(R1), check=True)
    assert rc == 0 and out["changed"] and not (tmp_path / f"tiny@{R1}").exists()
    assert len(out["fetch"]) == 7 and set(out["fetch"].values()) == {"missing"}

    rc, out = fetch(capsys, hub, tmp_path, hf(R1), log=str(tmp_path / "log"), report_every=0.05)
    dest = tmp_path / f"tiny@{R1}"
    assert rc == 0 and out["changed"] and out["path"] == str(dest) and out["files"] == 7
    files = hubserver.REPOS[REPO].commits[0]["files"]
    assert out["downloaded_bytes"] == out["total_bytes"] == sum(len(files[p]) for p in out["fetch"])
    assert not (dest / "README.md").exists()  # allow_patterns
    assert "tiny: 4.0 MiB of 4.0 MiB (100%)" in (tmp_path / "log").read_text()

    hubserver.STATE["log"].clear()
    rc, out = fetch(capsys, hub, tmp_path, hf(R1))
    assert rc == 0 and not out["changed"] and out["fetch"] == {}
    assert hubserver.STATE["log"] == []  # a complete directory: not one request to the hub

    with open(dest / SHARD, "r+b") as handle:  # corrupt one byte; the mtime changes
        handle.seek(1000)
        handle.write(b"\xff")
    rc, out = fetch(capsys, hub, tmp_path, hf(R1))
    assert rc == 0 and out["changed"] and out["fetch"] == {SHARD: "checksum"}
    assert hashlib.sha256((dest / SHARD).read_bytes()).hexdigest() == hashlib.sha256(files[SHARD]).hexdigest()
    assert [e["path"] for e in hubserver.STATE["log"] if e["path"].startswith("/lfs/")] == [
        f"/lfs/{hashlib.sha256(files[SHARD]).hexdigest()}"]

    # A new revision lands beside the old one; keep=0 then removes the old one, saying how much it freed.
    rc, out = fetch(capsys, hub, tmp_path, hf(R2))
    assert rc == 0 and out["kept"] == [str(tmp_path / f"tiny@{R2}"), str(dest)] and out["pruned"] == []
    rc, out = fetch(capsys, hub, tmp_path, hf(R2), keep=0)
    assert rc == 0 and out["changed"] and out["pruned"][0]["path"] == str(dest) and out["pruned"][0]["bytes"] > 4e6
    assert not dest.exists()


def test_too_little_space_is_refused_before_any_download(capsys, hub, tmp_path, monkeypatch):
    monkeypatch.setattr(_model, "free_bytes", lambda path: 1_000_000)
    rc, out = fetch(capsys, hub, tmp_path, hf(R2))
    files = hubserver.REPOS[REPO].commits[1]["files"]
    need = sum(len(c) for p, c in files.items() if p.endswith((".json", ".safetensors")))
    assert rc == 1
    assert out["msg"].startswith(f"h: model tiny: 4.0 MiB ({need} bytes) to download into {tmp_path}/tiny@{R2}, "
                                 "but only 976.6 KiB (1000000 bytes) free")
    assert not any(e["path"].startswith("/lfs/") for e in hubserver.STATE["log"])
    assert not (tmp_path / f"tiny@{R2}").exists()


def test_gated_needs_the_token_file_and_never_returns_it(capsys, hub, tmp_path):
    rc, out = fetch(capsys, hub, tmp_path, hf(G1, GATED), name="gated")
    assert rc == 1 and "Cannot access gated repo" in out["msg"] and "give the model a token" in out["msg"]
    bad = tmp_path / "bad"
    bad.write_text("hf_wrongWrongWrong\n")
    rc, out = fetch(capsys, hub, tmp_path, hf(G1, GATED), name="gated", token_file=str(bad))
    assert rc == 1 and "the hub refused the token" in out["msg"]
    good = tmp_path / "good"
    good.write_text(hubrepos.LAB_TOKEN + "\n")
    rc, out = fetch(capsys, hub, tmp_path, hf(G1, GATED), name="gated", token_file=str(good))
    assert rc == 0 and out["changed"] and hubrepos.LAB_TOKEN not in json.dumps(out)
    assert "hf_wrong" not in json.dumps(out)


def test_a_branch_is_refused(capsys, hub, tmp_path):
    rc, out = fetch(capsys, hub, tmp_path, hf("main"))
    assert rc == 1 and "hf.revision is 'main', not a commit id" in out["msg"]
    assert hubserver.STATE["log"] == []


def test_url_source_resumes_a_part_file_and_checks_sha256(capsys, hub, tmp_path):
    content = hubserver.REPOS[REPO].commits[1]["files"][SHARD]
    digest = hashlib.sha256(content).hexdigest()
    url = f"{hub}/{REPO}/resolve/{R2}/{SHARD}"
    source = {"url": url, "sha256": digest}
    dest = tmp_path / f"gguf@{digest[:12]}"
    dest.mkdir()
    (dest / (SHARD + ".part")).write_bytes(content[:1000])
    rc, out = fetch(capsys, hub, tmp_path, source, name="gguf")
    assert rc == 0 and out["changed"] and out["downloaded_bytes"] == len(content) - 1000
    assert (dest / SHARD).read_bytes() == content
    assert [e["range"] for e in hubserver.STATE["log"] if e["method"] == "GET"][-1] == "bytes=1000-"
    rc, out = fetch(capsys, hub, tmp_path, source, name="gguf")
    assert rc == 0 and not out["changed"]
    rc, out = fetch(capsys, hub, tmp_path, {"url": url, "sha256": "0" * 64}, name="other")
    assert rc == 1 and f"has sha256 {digest}, not {'0' * 64}" in out["msg"]


def test_path_source_is_only_checked(capsys, hub, tmp_path):
    rc, out = fetch(capsys, hub, tmp_path, {"path": str(tmp_path)}, name="local")
    assert rc == 0 and not out["changed"] and out["path"] == str(tmp_path)
    rc, out = fetch(capsys, hub, tmp_path, {"path": str(tmp_path / "no")}, name="local")
    assert rc == 1 and "does not exist; a path source is only checked" in out["msg"]
    assert os.listdir(tmp_path) == []


def check_all(capsys, hub, root, models, check=True):
    args = {"models": models, "root": str(root), "endpoint": hub, "host": "h", "_ansible_check_mode": check}
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        model_fetch.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_one_call_checks_every_model(capsys, hub, tmp_path):
    rc, _out = fetch(capsys, hub, tmp_path, hf(R1))
    assert rc == 0
    good = tmp_path / "good"
    good.write_text(hubrepos.LAB_TOKEN + "\n")
    models = [{"name": "tiny", "source": hf(R1), "token_file": ""},
              {"name": "gated", "source": hf(G1, GATED), "token_file": str(good)},
              {"name": "local", "source": {"path": str(tmp_path)}}]
    rc, out = check_all(capsys, hub, tmp_path, models)
    assert rc == 0 and out["changed"] is True and out["changed_models"] == ["gated"]
    assert list(out["models"]) == ["tiny", "gated", "local"]
    assert out["models"]["tiny"]["changed"] is False and out["models"]["tiny"]["fetch"] == {}
    assert out["models"]["gated"]["fetch"] and out["models"]["gated"]["downloaded_bytes"] > 0
    assert out["models"]["local"]["path"] == str(tmp_path)
    assert not (tmp_path / f"gated@{G1}").exists()  # checked, not fetched
    assert hubrepos.LAB_TOKEN not in json.dumps(out)


def test_one_models_token_never_reaches_the_next_one(capsys, hub, tmp_path):
    good = tmp_path / "good"
    good.write_text(hubrepos.LAB_TOKEN + "\n")
    models = [{"name": "a", "source": hf(G1, GATED), "token_file": str(good)},
              {"name": "b", "source": hf(G1, GATED), "token_file": ""}]
    rc, out = check_all(capsys, hub, tmp_path, models)
    assert rc == 1 and out["msg"].startswith("h: model b:") and "Cannot access gated repo" in out["msg"]


def test_several_models_are_only_checked(capsys, hub, tmp_path):
    rc, out = check_all(capsys, hub, tmp_path, [{"name": "tiny", "source": hf(R1)}], check=False)
    assert rc == 1 and "check mode only" in out["msg"] and not (tmp_path / f"tiny@{R1}").exists()
    rc, out = check_all(capsys, hub, tmp_path, [{"name": "tiny"}])
    assert rc == 1 and "an entry of models lacks source" in out["msg"]
    rc, out = fetch(capsys, hub, tmp_path, hf(R1), models=[])
    assert rc == 1 and "mutually exclusive" in out["msg"]


class _FillsUp:
    """A partial file on a filesystem that another writer fills: the write past *room* bytes fails (ENOSPC)."""

    def __init__(self, handle, room):
        self.handle, self.room = handle, room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)


def test_a_disk_that_fills_during_the_download_fails_with_both_numbers(capsys, hub, tmp_path, monkeypatch):
    from huggingface_hub import file_download  # the cached venv's real client (the hub fixture's path)

    real = file_download.http_get
    monkeypatch.setattr(file_download, "http_get", lambda url, temp_file, *a, **kw: real(
        url, _FillsUp(temp_file, 1000), *a, **kw))
    rc, out = fetch(capsys, hub, tmp_path, hf(R2), max_workers=1)
    dest = tmp_path / f"tiny@{R2}"
    assert rc == 1
    assert out["msg"].startswith(f"h: model tiny: the disk filled during the download into {dest} (No space left "
                                 "on device): ")
    assert " still to download, but only " in out["msg"]
    assert f"free on {_model.mount_point(str(tmp_path))}; the partial files were removed" in out["msg"]
    assert "the revision in service is untouched; fix: free space on " in out["msg"]
    left = int(out["msg"].split(" bytes) still to download")[0].rsplit("(", 1)[1])
    assert 0 < left <= out["downloaded_bytes"]
    assert not list(dest.rglob("*.incomplete")) and not (dest / _model.MARKER).exists()

    monkeypatch.setattr(file_download, "http_get", real)
    rc, out = fetch(capsys, hub, tmp_path, hf(R2))
    assert rc == 0 and out["changed"] and (dest / _model.MARKER).exists()
