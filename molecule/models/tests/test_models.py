"""Verify volta.serving.model on the converged host against what the lab hub publishes.

Every file of every fetched directory is hashed on the host and compared with the hub's own
metadata (``/api/models/{repo}/revision/{commit}?blobs=true``: LFS sha256 and git blob ids), asked
from the host; the token file is 0600 and the token appears in no log; the client is the pinned
release; the url source's file has its sha256.
"""

from __future__ import annotations

import json

testinfra_hosts = ["ansible://models-host"]
ROOT = "/srv/volta/models"
R1, R2 = "2d2d6f3ca4d2dda655cec488e7022f183285ecd7", "62521a9a08fa68fd2bf6d2ff364ed2e35cf959d1"
G1 = "e06e77b8c9e357a59883fef137b681b4d0b434b9"
TOKEN = "hf_voltaLabStandInToken0000000000000"  # noqa: S105  the lab hub's token, not a real one
HUB = "http://volta-lab-hub:8090"
PY = f"{ROOT}/.tools/huggingface_hub-2.4.0/bin/python"

# Run on the host: the hub's metadata of REPO@REV, then each listed file's sha256 / blob id on disk.
CHECK = r"""
import hashlib, json, os, sys, urllib.request
hub, repo, rev, dest = sys.argv[1:5]
token = sys.argv[5] if len(sys.argv) > 5 else ""
req = urllib.request.Request(f"{hub}/api/models/{repo}/revision/{rev}?blobs=true",
                             headers={"Authorization": f"Bearer {token}"} if token else {})
info = json.load(urllib.request.urlopen(req))
out = {}
for s in info["siblings"]:
    path = os.path.join(dest, s["rfilename"])
    if not os.path.exists(path):
        continue
    data = open(path, "rb").read()
    if s.get("lfs"):
        out[s["rfilename"]] = hashlib.sha256(data).hexdigest() == s["lfs"]["sha256"]
    else:
        out[s["rfilename"]] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == s["blobId"]
print(json.dumps({"sha": info["sha"], "files": out}))
"""


def hub_check(host, repo, rev, dest, token=""):
    out = host.check_output(f"python3 -c '{CHECK}' {HUB} {repo} {rev} {dest} {token}")
    return json.loads(out)


def test_tiny_second_revision_matches_the_hub_and_the_first_is_gone(host):
    got = hub_check(host, "volta-lab/tiny-llama", R2, f"{ROOT}/tiny@{R2}")
    assert got["sha"] == R2
    assert sorted(got["files"]) == ["config.json", "generation_config.json", "model-00001-of-00002.safetensors",
                                    "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                    "tokenizer.json", "tokenizer_config.json"]
    assert all(got["files"].values())
    assert not host.file(f"{ROOT}/tiny@{R1}").exists
    assert not host.file(f"{ROOT}/tiny@{R2}/README.md").exists  # allow_patterns


def test_gated_model_matches_the_hub_and_its_token_stays_secret(host):
    got = hub_check(host, "volta-lab/tiny-gated", G1, f"{ROOT}/gated@{G1}", TOKEN)
    assert len(got["files"]) == 9 and all(got["files"].values())
    token = host.file(f"{ROOT}/.tokens/gated")
    assert token.mode == 0o600 and token.user == "root" and token.content_string == TOKEN
    assert host.run(f"grep -rl {TOKEN} {ROOT}/.logs {ROOT}/gated@{G1}").stdout == ""


def test_url_source_file_has_its_sha256(host):
    path = f"{ROOT}/shard@077835a4c075/model-00001-of-00002.safetensors"
    assert host.file(path).sha256sum == "077835a4c075493e080d0430a00f824efdc4562af8b0b4940cac54aff1bb6444"
    assert not host.file(path + ".part").exists


def test_the_pinned_client_is_installed_and_progress_was_logged(host):
    version = host.check_output(f"{PY} -c 'import huggingface_hub; print(huggingface_hub.__version__)'")
    assert version == "2.4.0"
    log = host.file(f"{ROOT}/.logs/tiny.log").content_string
    assert "tiny: 4.0 MiB of 4.0 MiB (100%)" in log and "/s, ETA" in log


def test_the_path_source_was_only_checked(host):
    assert not host.file(f"{ROOT}/local@").exists
    assert host.file("/srv/local-model/config.json").exists
