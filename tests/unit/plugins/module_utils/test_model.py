# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_model.py: model sources, served paths, file checks, disk, progress, retention."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest
from ansible_collections.volta.serving.plugins.module_utils import _model as m

C1 = "a" * 40
SHA = "b" * 64
ROOT = "/srv/volta/models"


@pytest.mark.parametrize(
    ("source", "served"),
    [
        ({"hf": {"repo": "Qwen/Qwen2.5-72B-Instruct", "revision": C1}}, f"{ROOT}/m@{C1}"),
        ({"url": "https://host/x/tiny.Q4_K_M.gguf", "sha256": SHA}, f"{ROOT}/m@{SHA[:12]}/tiny.Q4_K_M.gguf"),
        ({"path": "/nfs/models/m/"}, "/nfs/models/m"),
    ],
)
def test_served_path_of_each_kind(source, served):
    assert m.served_path(ROOT, "m", m.check_source("m", source)) == served


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("m", {"hf": {"repo": "Qwen/Qwen2.5", "revision": "main"}}, "hf.revision is 'main', not a commit id"),
        ("m", {"hf": {"repo": "Qwen/Qwen2.5", "revision": C1[:12]}}, "not a commit id"),
        ("m", {"hf": {"repo": "no-org", "revision": C1}}, "a Hugging Face repository is ORG/NAME"),
        ("m", {"hf": {"repo": "a/b", "revision": C1, "allow_patterns": "*.json"}}, "not a list of glob patterns"),
        ("m", {"url": "https://host/x.gguf"}, "sha256 is missing"),
        ("m", {"url": "ftp://host/x.gguf", "sha256": SHA}, "not an http(s) URL of a file"),
        ("m", {"url": "https://host/", "sha256": SHA}, "not an http(s) URL of a file"),
        ("m", {"path": "models/m"}, "is not absolute"),
        ("m", {"path": "/a", "url": "https://h/f", "sha256": SHA}, "source kind(s)"),
        ("m", {}, "names no source kind(s)"),
        ("m/x", {"path": "/a"}, "cannot be a directory name"),
        ("m", "/a", "a source is a mapping"),
    ],
)
def test_bad_sources_are_refused_with_what_why_fix(name, source, message):
    with pytest.raises(m.ModelError, match="fix: ") as err:
        m.check_source(name, source)
    assert message in str(err.value)


def test_a_branch_is_accepted_only_when_allowed():
    src = m.check_source("m", {"hf": {"repo": "a/b", "revision": "main"}}, allow_branch=True)
    assert m.model_dir(ROOT, "m", src) == f"{ROOT}/m@main"


MODELS = {
    "qwen": {"hf": {"repo": "Qwen/Qwen2.5-72B-Instruct", "revision": C1, "token": "hf_secret"}},
    "gguf": {"url": "https://host/tiny.gguf", "sha256": SHA},
}


def test_resolve_instances_sets_model_and_drops_model_source():
    insts = [{"name": "a", "engine": "vllm", "model_source": "qwen"}, {"name": "b", "model": "/x"}]
    out = m.resolve_instances(insts, MODELS, ROOT)
    assert out == [{"name": "a", "engine": "vllm", "model": f"{ROOT}/qwen@{C1}"}, {"name": "b", "model": "/x"}]
    assert "model_source" in insts[0]  # the inventory's list is not changed


@pytest.mark.parametrize(
    ("inst", "message"),
    [
        ({"name": "a", "model_source": "nope"},
         "instance a: model_source 'nope' is not in volta_models; known: gguf, qwen"),
        ({"name": "a", "model_source": "qwen", "model": "/other"}, "disagree"),
    ],
)
def test_resolve_instances_refuses(inst, message):
    with pytest.raises(m.ModelError, match="fix: ") as err:
        m.resolve_instances([inst], MODELS, ROOT)
    assert message in str(err.value)


def test_model_plan_never_carries_the_token():
    plan = m.model_plan([{"model_source": "qwen"}, {"model_source": "gguf"}, {"model_source": "qwen"}], MODELS, ROOT)
    assert [p["name"] for p in plan] == ["qwen", "gguf"]
    assert plan[0]["token"] is True and "token" not in plan[0]["source"]["hf"]
    assert "hf_secret" not in repr(plan)
    assert plan[1] == {"name": "gguf", "kind": "url", "source": MODELS["gguf"], "token": False,
                       "dir": f"{ROOT}/gguf@{SHA[:12]}", "path": f"{ROOT}/gguf@{SHA[:12]}/tiny.gguf"}
    assert [p["name"] for p in m.model_plan([], MODELS, ROOT, names=["gguf"])] == ["gguf"]
    with pytest.raises(m.ModelError, match="models x are not in volta_models"):
        m.model_plan([], MODELS, ROOT, names=["x"])


@pytest.mark.parametrize("endpoint", ["https://huggingface.co", "https://mirror.example:8443", "http://127.0.0.1:8080"])
def test_model_plan_sends_a_token_over_https_or_to_loopback(endpoint):
    assert [p["name"] for p in m.model_plan([{"model_source": "qwen"}], MODELS, ROOT, endpoint=endpoint)] == ["qwen"]


def test_model_plan_refuses_a_token_over_plain_http_without_showing_it():
    with pytest.raises(m.ModelError) as err:
        m.model_plan([{"model_source": "qwen"}], MODELS, ROOT, endpoint="http://mirror.example")
    assert str(err.value).startswith(
        "model qwen: model_hf_endpoint 'http://mirror.example' is plain http to a host other than this machine; the "
        "client reads the hub there and sends the model's token (hf.token) in an Authorization header with every "
        "request; over plain http anyone on the network path reads it; fix: use the https address"
    )
    assert "hf_secret" not in str(err.value)
    # Without a token plain http is allowed; a url source never reads the hub.
    public = {"qwen": {"hf": {"repo": "Qwen/Qwen2.5-72B-Instruct", "revision": C1}}, "gguf": MODELS["gguf"]}
    assert len(m.model_plan([{"model_source": "qwen"}, {"model_source": "gguf"}], public, ROOT,
                            endpoint="http://mirror.example")) == 2
    with pytest.raises(m.ModelError, match=r"model_hf_endpoint 'mirror\.example' is not an http"):
        m.model_plan([{"model_source": "qwen"}], public, ROOT, endpoint="mirror.example")
    # The lab (volta_lab: true): its stand-in hub serves plain http to its stand-in token.
    assert len(m.model_plan([{"model_source": "qwen"}], MODELS, ROOT, endpoint="http://volta-lab-hub:8090",
                            lab=True)) == 1


@pytest.mark.parametrize(
    ("source_ref", "message"),
    [(["qwen"], "instance chat: model_source ['qwen'] is not a model name"),
     (7, "instance chat: model_source 7 is not a model name"),
     ("nope", "not in volta_models")],
)  # fmt: skip
def test_a_model_source_that_is_no_known_name_is_refused_not_a_crash(source_ref, message):
    for call in (lambda: m.resolve_instances([{"name": "chat", "model_source": source_ref}], MODELS, ROOT),
                 lambda: m.model_plan([{"name": "chat", "model_source": source_ref}], MODELS, ROOT)):
        with pytest.raises(m.ModelError) as err:
            call()
        assert message in str(err.value)
    # volta_models not a mapping (the shape check refuses it first): its content, a token, is never shown.
    with pytest.raises(m.ModelError, match="known: none") as err:
        m.resolve_instances([{"name": "chat", "model_source": "qwen"}], [MODELS], ROOT)
    assert "hf_secret" not in str(err.value)


@pytest.mark.parametrize(
    ("patterns", "kept"),
    [
        ([], ["a/x.json", "config.json", "m.safetensors", "orig/m.pth"]),
        (["*.json"], ["a/x.json", "config.json"]),
        (["*.safetensors", "config.json"], ["config.json", "m.safetensors"]),
        (["orig/"], ["orig/m.pth"]),
    ],
)
def test_select_files_follows_fnmatch_like_the_client(patterns, kept):
    entries = [{"path": p} for p in ["a/x.json", "config.json", "m.safetensors", "orig/m.pth"]]
    assert [e["path"] for e in m.select_files(entries, patterns)] == kept


def _repo(tmp_path, files):
    manifest = {}
    for path, content in files.items():
        (tmp_path / path).write_bytes(content)
        if path.endswith(".safetensors"):
            manifest[path] = {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()}
        else:
            blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # noqa: S324
            manifest[path] = {"size": len(content), "blob": blob}
    return manifest


def test_check_files_finds_missing_truncated_and_corrupt_files(tmp_path):
    manifest = _repo(tmp_path, {"config.json": b"{}", "a.safetensors": b"x" * 100, "b.safetensors": b"y" * 10})
    manifest["gone.json"] = {"size": 3, "blob": "0" * 40}
    (tmp_path / "b.safetensors").write_bytes(b"y" * 9)
    (tmp_path / "a.safetensors").write_bytes(b"z" + b"x" * 99)
    assert m.check_files(str(tmp_path), manifest) == {
        "a.safetensors": "checksum", "b.safetensors": "size", "config.json": "ok", "gone.json": "missing"}


def test_the_marker_spares_unchanged_files_and_a_changed_mtime_rehashes(tmp_path):
    manifest = _repo(tmp_path, {"a.safetensors": b"x" * 100})
    marker = m.marker_record(str(tmp_path), manifest, {"hf": {}}, 1.0)
    # Same size and mtime as recorded: trusted without reading (content changed behind the marker's back).
    st = os.stat(tmp_path / "a.safetensors")
    (tmp_path / "a.safetensors").write_bytes(b"q" * 100)
    os.utime(tmp_path / "a.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert m.check_files(str(tmp_path), manifest, marker) == {"a.safetensors": "ok"}
    assert m.check_files(str(tmp_path), manifest, marker, full=True) == {"a.safetensors": "checksum"}
    os.utime(tmp_path / "a.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert m.check_files(str(tmp_path), manifest, marker) == {"a.safetensors": "checksum"}


def test_marker_round_trip(tmp_path):
    manifest = _repo(tmp_path, {"config.json": b"{}"})
    m.write_marker(str(tmp_path), m.marker_record(str(tmp_path), manifest, {"url": "u"}, 5.0))
    got = m.read_marker(str(tmp_path))
    assert got["source"] == {"url": "u"} and got["fetched_at"] == 5.0 and got["files"]["config.json"]["size"] == 2
    assert m.read_marker(str(tmp_path / "none")) is None


def test_disk_refusal_gives_both_numbers():
    assert m.disk_refusal("h", "qwen", "/d", 100, 100) is None
    msg = m.disk_refusal("h", "qwen", "/d", 145_000_000_000, 80_000_000_000)
    assert msg.startswith("h: model qwen: 135.0 GiB (145000000000 bytes) to download into /d, but only 74.5 GiB")
    assert "(80000000000 bytes) free" in msg and "nothing was downloaded" in msg and "fix: " in msg
    assert "beyond the 1.0 KiB kept free" in m.disk_refusal("h", "q", "/d", 100, 1000, reserve=1024)


def test_free_bytes_walks_up_to_an_existing_directory(tmp_path):
    assert m.free_bytes(str(tmp_path / "not" / "yet")) == m.free_bytes(str(tmp_path)) > 0


@pytest.mark.parametrize(
    ("done", "total", "seconds", "line"),
    [
        (0, 1024, 0, "m: 0 B of 1.0 KiB (0%), 0 B/s, ETA -"),
        (512 * 2**20, 2 * 2**30, 4, "m: 512.0 MiB of 2.0 GiB (25%), 128.0 MiB/s, ETA 12s"),
        (2**30, 151 * 2**30, 10, "m: 1.0 GiB of 151.0 GiB (0%), 102.4 MiB/s, ETA 25m00s"),
        (2**30, 2**30, 10, "m: 1.0 GiB of 1.0 GiB (100%), 102.4 MiB/s, ETA -"),
    ],
)
def test_progress_line(done, total, seconds, line):
    assert m.progress_line("m", done, total, seconds) == line


def test_prune_plan_keeps_the_current_and_the_newest_others():
    entries = [{"path": "m@1", "fetched_at": 1}, {"path": "m@2", "fetched_at": 2}, {"path": "m@3", "fetched_at": 3},
               {"path": "m@4", "fetched_at": 4}]
    kept, removed = m.prune_plan(entries, "m@2", 1)
    assert [e["path"] for e in kept] == ["m@2", "m@4"] and [e["path"] for e in removed] == ["m@3", "m@1"]
    kept, removed = m.prune_plan(entries, "m@4", 0)
    assert [e["path"] for e in kept] == ["m@4"] and len(removed) == 3


class GatedRepoError(Exception):
    pass


class HfHubHTTPError(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "part"),
    [
        (GatedRepoError("401 Client Error.\n\nCannot access gated repo"), "give the model a token"),
        (HfHubHTTPError("Client error '401 Unauthorized' for url"), "the hub refused the token"),
        (OSError("boom"), "OSError: boom; fix: check model_hf_endpoint"),
        (ModuleNotFoundError("No module named 'huggingface_hub'"), "run it with the venv"),
    ],
)
def test_explain_words_the_client_errors(exc, part):
    assert part in m.explain(exc)


def test_the_defaults_of_the_controller_side_match_the_role():
    """Preflight and the serving plan default to what roles/model/defaults/main.yml says (one value each)."""
    import yaml

    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "model", "defaults", "main.yml")
    with open(root, encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    assert defaults["model_hf_endpoint"] == m.DEFAULT_ENDPOINT
    assert defaults["model_root"] == "{{ volta_models_root | default('" + m.DEFAULT_ROOT + "') }}"


def test_disk_full_is_found_through_the_chain_of_exceptions():
    full = OSError(errno.ENOSPC, "No space left on device")
    wrapped = RuntimeError("download failed")
    wrapped.__cause__ = full
    assert m.is_disk_full(full) and m.is_disk_full(wrapped)
    assert not m.is_disk_full(OSError(errno.EACCES, "Permission denied")) and not m.is_disk_full(ValueError("x"))


def test_the_mount_point_of_a_path_not_made_yet(tmp_path):
    assert m.mount_point(str(tmp_path / "not" / "yet")) == m.mount_point(str(tmp_path))
    assert os.path.ismount(m.mount_point(str(tmp_path)))


def test_disk_full_message_gives_both_numbers_and_the_fix():
    msg = m.disk_full_message("h", "qwen", "/srv/m/qwen@c", 2_097_400, 4096, "/srv/m")
    assert msg.startswith("h: model qwen: the disk filled during the download into /srv/m/qwen@c (No space left on "
                          "device): 2.0 MiB (2097400 bytes) still to download, but only 4.0 KiB (4096 bytes) free on "
                          "/srv/m; ")
    assert "not marked complete" in msg and "the revision in service is untouched" in msg
    assert msg.endswith("fix: free space on /srv/m (or point model_root at a larger filesystem, or lower "
                        "model_keep), then rerun")
