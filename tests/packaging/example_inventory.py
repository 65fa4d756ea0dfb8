"""Helpers of the packaging tests: the shipped example inventory as an operator fills it in.

An operator copies inventories/example, encrypts an API key of their own with their own Vault
password (ansible-vault encrypt_string) and pastes it over the placeholder of
group_vars/volta/vault.yml. copy_with_key does the same in a temporary directory.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

PLACEHOLDER_RE = re.compile(r"^  chat: !vault \|\n(?:^ {4,}\S.*\n)+", re.M)


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(extra or {})
    return env


def copy_with_key(source, target, bin_dir, key="k3y-of-a-test-0123456789abcdef0123"):
    """Copy the example inventory *source* to *target* with *key* encrypted under a test password;
    returns the password file."""
    shutil.copytree(source, target)
    password = target.parent / f"{target.name}-vault-pass"
    password.write_text("a test-time vault password\n")
    password.chmod(0o600)
    proc = subprocess.run([str(Path(bin_dir) / "ansible-vault"), "encrypt_string", "--vault-password-file",
                           str(password), "--name", "chat", key],
                          capture_output=True, text=True, check=True, env=clean_env(), cwd=target.parent)
    vault = target / "group_vars" / "volta" / "vault.yml"
    text = vault.read_text()
    assert PLACEHOLDER_RE.search(text), "the placeholder of vault.yml is not where the operator is told it is"
    pasted = "".join(f"  {line}\n" for line in proc.stdout.splitlines())
    vault.write_text(PLACEHOLDER_RE.sub(lambda _match: pasted, text, count=1))
    return password


FAKE_NVIDIA_SMI = """#!/bin/sh
# nvidia-smi of the packaging tests: the real capture of tests/fixtures/nvidia-smi.
case "$1" in
  --query-gpu=*) cat '{capture}/query-noheader.csv' ;;
  topo) cat '{capture}/topo.txt' ;;
  *) echo "unexpected arguments: $*" >&2; exit 2 ;;
esac
"""


def fake_nvidia_smi(directory, capture):
    path = Path(directory) / "nvidia-smi"
    path.write_text(FAKE_NVIDIA_SMI.format(capture=capture))
    path.chmod(0o755)
    return path
