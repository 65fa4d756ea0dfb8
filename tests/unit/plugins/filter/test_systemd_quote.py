# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the filters volta.serving.systemd_exec, systemd_env and systemd_env_file."""

from __future__ import annotations

import re
import shlex

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.volta.serving.plugins.filter.systemd_quote import (
    FilterModule,
    systemd_env,
    systemd_env_file,
    systemd_exec,
)


def systemd_unquote(line):
    """Read an ExecStart= value back the way systemd does for the escapes we emit."""
    line = line.replace("%%", "\0pct").replace("$$", "\0dol")
    assert "%" not in line and "$" not in line, line
    return [w.replace("\0pct", "%").replace("\0dol", "$") for w in shlex.split(line, posix=True)]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/opt/v/bin/vllm", "serve", "/srv/m", "--port", "18001"], "/opt/v/bin/vllm serve /srv/m --port 18001"),
        (["/bin/x", "--gpu-memory-utilization", 0.9], "/bin/x --gpu-memory-utilization 0.9"),
        (["/bin/x", '{"method":"mtp","n":1}'], '/bin/x "{\\"method\\":\\"mtp\\",\\"n\\":1}"'),
        (["/bin/x", "a b"], '/bin/x "a b"'),
        (["/bin/x", ""], '/bin/x ""'),
        (["/bin/x", "50%"], '/bin/x "50%%"'),
        (["/bin/x", "$HOME"], '/bin/x "$$HOME"'),
        (["/bin/x", "back\\slash"], '/bin/x "back\\\\slash"'),
        (["/bin/x", "it's"], '/bin/x "it\'s"'),
        (["/bin/x", "a;b"], '/bin/x "a;b"'),
    ],
)
def test_systemd_exec(argv, expected):
    line = systemd_exec(argv)
    assert line == expected
    assert systemd_unquote(line) == [str(a) for a in argv]


@pytest.mark.parametrize(
    "argv",
    [[], "not a list", ["relative/prog"], ["/bin/x", "line\nbreak"], ["/bin/x", True], ["/bin/x", None]],
)
def test_systemd_exec_refuses(argv):
    with pytest.raises(AnsibleFilterError):
        systemd_exec(argv)


def test_systemd_env_sorted_and_quoted():
    env = {"CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "X": 'a "b" 5%', "E": None}
    assert systemd_env(env) == [
        '"CUDA_DEVICE_ORDER=PCI_BUS_ID"',
        '"CUDA_VISIBLE_DEVICES=0,1"',
        '"E="',
        '"X=a \\"b\\" 5%%"',
    ]


@pytest.mark.parametrize("env", [{"1BAD": "x"}, {"A-B": "x"}, {"": "x"}, {"A": "x\ny"}, ["A=1"]])
def test_systemd_env_refuses(env):
    with pytest.raises(AnsibleFilterError):
        systemd_env(env)


def test_filters_are_registered():
    names = FilterModule().filters()
    assert set(names) == {"systemd_exec", "systemd_env", "systemd_env_file", "systemd_paths", "systemd_ip_allow",
                          "systemd_account"}
    assert all(re.match(r"^systemd_", n) for n in names)


def env_file_unquote(text):
    """Read an EnvironmentFile back the way systemd's env-file parser does for what we emit."""
    out = {}
    for line in text.splitlines():
        key, _eq, quoted = line.partition("=")
        assert quoted.startswith('"') and quoted.endswith('"'), line
        body, value, index = quoted[1:-1], [], 0
        while index < len(body):
            if body[index] == "\\" and index + 1 < len(body) and body[index + 1] in '"\\`$':
                value.append(body[index + 1])
                index += 2
                continue
            assert body[index] not in '"', line  # an unescaped quote would end the value
            value.append(body[index])
            index += 1
        out[key] = "".join(value)
    return out


@pytest.mark.parametrize(
    "env",
    [
        {"VLLM_API_KEY": "sk-abc123"},
        {"HF_TOKEN": 'a"b\\c$d`e %f', "A": 1},
        {"X": "", "Y": "trailing\\"},
    ],
)
def test_systemd_env_file_reads_back_unchanged(env):
    text = systemd_env_file(env)
    assert text.endswith("\n")
    assert list(env_file_unquote(text)) == sorted(env)
    assert env_file_unquote(text) == {k: str(v) for k, v in env.items()}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"HF_TOKEN": "hf_secret\nUser=root"}, "the value of HF_TOKEN contains a control character (not shown)"),
        ({"HF_TOKEN": ["hf_secret"]}, "the value of HF_TOKEN is not a string (not shown)"),
        ({"A B": "hf_secret"}, "'A B' is not a valid environment variable name"),
        ("HF_TOKEN=hf_secret", "expected a mapping"),
    ],
)
def test_systemd_env_file_refuses_without_showing_the_value(env, message):
    with pytest.raises(AnsibleFilterError) as exc:
        systemd_env_file(env)
    assert message in str(exc.value)
    assert "hf_secret" not in str(exc.value)
