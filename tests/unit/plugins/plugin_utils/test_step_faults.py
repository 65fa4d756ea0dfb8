# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/_step_faults.py: a full disk or an unreachable index read from a failed step's log."""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _step_faults as f

PYPI = "http://pypi.internal:8080/simple"
TORCH = "http://pypi.internal:8080/whl"
# uv 0.13.9's own words, from the lab (molecule/faults_storage): a torch install into a filled filesystem,
# and the build requirements with the index cut off.
UV_FULL = """Prepared 26 packages in 2.66s
error: Failed to install: nvidia_nccl_cu12-2.27.5-py3-none-any.whl (nvidia-nccl-cu12==2.27.5)
  cause: Failed to copy to `/opt/volta/engines/vllm/x/venv/lib/python3.11/site-packages/nvidia_nccl_cu12/RECORD`
  cause: failed to copy file from /var/cache/uv/RECORD to /opt/volta/engines/vllm/x/venv/RECORD: \
No space left on device (os error 28)
"""
UV_REFUSED = f"""error: Request failed after 3 retries in 5.1s
  cause: Failed to fetch: {PYPI}/packaging/
  cause: error sending request for url ({PYPI}/packaging/)
  cause: client error (Connect)
  cause: tcp connect error
  cause: Connection refused (os error 111)
"""
UV_TORCH = f"error: Failed to fetch: `{TORCH}/cu126/torch/`\n  cause: tcp connect error: Connection refused\n"
PIP_DNS = ("WARNING: Retrying ... Failed to establish a new connection: [Errno -3] Temporary failure in name "
           "resolution')': /simple/setuptools/\nERROR: No matching distribution found for setuptools")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (UV_FULL, "disk"),
        ("OSError: [Errno 28] No space left on device: '/opt/x'", "disk"),
        (UV_REFUSED, "index"),
        (UV_TORCH, "index"),
        (PIP_DNS, "index"),
        ("error: Failed to fetch ... No space left on device (os error 28)\nConnection reset", "disk"),
        ("error: Because vllm==9.9 was not found in the package registry", None),
        ("", None),
    ],
)
def test_classify(text, kind):
    assert f.classify(text) == kind


def test_cause_is_the_last_line_that_shows_the_fault():
    assert f.cause(UV_FULL, "disk").startswith("cause: failed to copy file from /var/cache/uv/RECORD to /opt/")
    assert f.cause(UV_FULL, "disk").endswith("No space left on device (os error 28)")
    assert f.cause(UV_REFUSED, "index") == "cause: Connection refused (os error 111)"
    assert len(f.cause("x" * 500 + " ENOSPC", "disk")) == f.CAUSE_LIMIT
    assert f.cause("nothing", "index") == ""


@pytest.mark.parametrize(
    ("text", "urls", "index"),
    [
        (UV_REFUSED, [PYPI, TORCH], PYPI),
        (UV_TORCH, [PYPI, TORCH], TORCH),
        (UV_TORCH, [PYPI, TORCH + "/"], TORCH),
        (f"Failed to fetch: `{PYPI}/setuptools/`", [PYPI, TORCH], PYPI),
        ("Failed to fetch: `http://other:3128/x`.", [PYPI], "http://other:3128/x"),
        ("Connection refused", [PYPI, TORCH], f"{PYPI} or {TORCH}"),
        ("Connection refused", [], "the package index"),
    ],
)
def test_failing_index(text, urls, index):
    assert f.failing_index(text, urls) == index


def test_parse_df_and_du():
    df = ("Filesystem     1-blocks   Used Available Capacity Mounted on\n"
          "tmpfs 268435456 268431360 4096 100% /opt/volta\n")
    assert f.parse_df(df) == (4096, "/opt/volta")
    assert f.parse_df("tmpfs 1 2 3 4% /mnt/a b\n") == (3, "/mnt/a b")
    assert f.parse_df("df: /x: No such file or directory") == (None, "")
    assert f.parse_df("") == (None, "")
    assert f.parse_du("52428800\t/opt/volta/engines/vllm/x\n") == 52428800
    assert f.parse_du("du: cannot access") is None and f.parse_du("") is None


def test_disk_full_message_gives_both_numbers_where_and_the_fix():
    msg = f.disk_full_message("gpu-01", "install torch 2.11.0 (cu126)", "/opt/e/vllm/x", 52428800, 4096,
                              "/opt/e", "No space left on device (os error 28)")
    assert msg.startswith("gpu-01: the disk filled during 'install torch 2.11.0 (cu126)' (No space left on device: "
                          "No space left on device (os error 28)); /opt/e/vllm/x had 50.0 MiB (52428800 bytes) "
                          "written when it stopped, and 4.0 KiB (4096 bytes) are free on /opt/e")
    assert msg.endswith("fix: free space on /opt/e (or move engine_root to a larger filesystem, or lower "
                        "engine_keep), then rerun: the unfinished install is removed and made again.")
    unknown = f.disk_full_message("h", "s", "/p", None, None, "", "")
    assert "had an unknown number of bytes written" in unknown and "free on its filesystem" in unknown


def test_index_unreachable_message_names_the_index_and_the_fix():
    msg = f.index_unreachable_message("gpu-01", "install torch 2.11.0 (cu126)", TORCH, "Connection refused")
    assert msg == (f"gpu-01: the package index {TORCH} could not be reached during 'install torch 2.11.0 (cu126)' "
                   f"(Connection refused); fix: make {TORCH} answer from gpu-01 (the index server, DNS, proxy, "
                   "firewall), then rerun: the unfinished install is removed and made again.")
