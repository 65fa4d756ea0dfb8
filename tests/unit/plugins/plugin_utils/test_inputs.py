# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad input refused by the serving plan (plugins/plugin_utils/_inputs.py, wired into _plan).

Each case is an input that passed preflight before (security review, issue "Hardening"): a
compute_capability typo that turned the V100 rules off, control characters that reach a unit file
or the nginx configuration, environment names systemd cannot take. Every case asserts the
finding's field and message.
"""

from __future__ import annotations

import copy

import pytest
from ansible_collections.volta.serving.plugins.plugin_utils import _inputs
from ansible_collections.volta.serving.plugins.plugin_utils._plan import PlanInputs, build_report

from .plan_inputs import INSTANCE, SERVER


def report(server=None, instances=None, **settings):
    settings.setdefault("generate_keys", True)
    server = copy.deepcopy(SERVER if server is None else server)
    instances = copy.deepcopy([INSTANCE] if instances is None else instances)
    return build_report(PlanInputs("lab-host", server, instances, **settings))


def errors(rep):
    return [f for f in rep["findings"] if f["severity"] == "error"]


def with_(base, **changes):
    out = copy.deepcopy(base)
    out.update(changes)
    return out


def test_the_baseline_is_clean():
    rep = report()
    assert rep["findings"] == []
    assert len(rep["plan"]["instances"]) == 1


# --- compute_capability -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["sm70", "sm_70", "7", "70", "7.0.1", "7.0\n", " 7.0", "v7.0", "", True, 7])
def test_unreadable_compute_capability_is_an_error(value):
    rep = report(server=with_(SERVER, compute_capability=value))
    hits = [f for f in errors(rep) if f["field"] == "volta_server.compute_capability"]
    assert len(hits) == 1, rep["findings"]
    message = hits[0]["message"]
    field = "volta_server.compute_capability"
    assert message.startswith(f"lab-host: host-wide: field {field}: compute_capability {value!r}")
    assert "is not MAJOR.MINOR." in message
    assert "would turn every one of them off" in message
    assert 'Fix: write it as a quoted string, "7.0" for a V100' in message


@pytest.mark.parametrize("value", ["7.0", "8.6", "12.0", 7.0])
def test_readable_compute_capability_passes(value):
    assert _inputs.check_compute_capability("h", {"compute_capability": value}) == []


def test_sm70_typo_no_longer_lets_driver_590_pass():
    # "sm70" used to switch the driver and CUDA rules off: now the typo itself stops the run.
    rep = report(server=with_(SERVER, compute_capability="sm70"), driver_branch="590", cuda_version="13.0")
    assert rep["errors"] >= 1
    assert any("compute_capability 'sm70'" in f["message"] for f in errors(rep))


# --- control characters and environment names ----------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field", "shown"),
    [
        ({"model": "/srv/models/m\n[Service]"}, "model", "'\\n'"),
        ({"served_model_name": "m1\nserver { listen 9; }"}, "served_model_name", "'\\n'"),
        ({"served_model_name": "m1\r"}, "served_model_name", "'\\r'"),
        ({"extra_args": ["--max-log-len", "10\nExecStartPre=/bin/sh"]}, "extra_args[1]", "'\\n'"),
        ({"env": {"HF_HOME": "/srv/hf\nUser=root"}}, "env['HF_HOME']", "'\\n'"),
        ({"env": {"HF_HOME": "/srv/hf\x00"}}, "env['HF_HOME']", "'\\x00'"),
        ({"model": "/srv/models/m\u2028x"}, "model", "'\\u2028'"),
        ({"model": "/srv/models/m\x85"}, "model", "'\\x85'"),
    ],
)
def test_control_characters_are_refused_in_preflight(changes, field, shown):
    rep = report(instances=[with_(INSTANCE, **changes)])
    hits = [f for f in errors(rep) if f["field"] == field]
    assert len(hits) == 1, rep["findings"]
    message = hits[0]["message"]
    assert message.startswith(f"lab-host: instance m1: field {field}: {field} ")
    assert f"contains the control character(s) {shown}." in message
    assert "a newline there starts a new directive" in message
    assert f"Fix: remove the control characters from {field}." in message
    assert rep["plan"]["instances"] == []


def test_newline_in_name_never_reaches_a_unit_name():
    rep = report(instances=[with_(INSTANCE, name="m1\n")])
    hits = [f for f in errors(rep) if f["field"] == "name"]
    assert hits
    assert "name 'm1\\n' cannot be part of a systemd unit name." in hits[0]["message"]
    assert hits[0]["instance"] == "#0"
    assert "\n" not in hits[0]["message"]
    assert rep["plan"]["instances"] == []


@pytest.mark.parametrize("name", ["A B", "1X", "X-Y", "X=Y", "", "X\n", "É"])
def test_invalid_env_names_are_refused(name):
    rep = report(instances=[with_(INSTANCE, env={name: "1"})])
    hits = [f for f in errors(rep) if f["field"] == "env" and "environment variable name" in f["message"]]
    assert len(hits) == 1, rep["findings"]
    assert f"env name {name!r} is not a valid environment variable name." in hits[0]["message"]
    assert "Fix: rename it to match [A-Za-z_][A-Za-z0-9_]*" in hits[0]["message"]
    assert rep["plan"]["instances"] == []


@pytest.mark.parametrize("name", ["A", "_X", "HF_HOME", "x1"])
def test_valid_env_names_pass(name):
    assert _inputs.check_env_names("h", "m1", "env", {name: "1"}) == []


def test_control_characters_in_volta_server_text():
    rep = report(server=with_(SERVER, gpu_model="Tesla V100\nX"))
    hits = [f for f in errors(rep) if f["field"] == "volta_server.gpu_model"]
    assert len(hits) == 1
    assert "contains the control character(s) '\\n'" in hits[0]["message"]


def test_control_characters_lists_each_kind_once():
    assert _inputs.control_characters("a\nb\nc\t") == ["'\\n'", "'\\t'"]
    assert _inputs.control_characters("plain text / ok") == []


# --- secrets in env, and secret_env -----------------------------------------------------------


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "DB_PASSWORD", "MY_SECRET", "S3_KEY"])
def test_secret_looking_env_names_warn(name):
    rep = report(instances=[with_(INSTANCE, env={name: "v"})])
    hits = [f for f in rep["findings"] if f["rule"] == "secret-in-env"]
    assert [f["severity"] for f in hits] == ["warning"]
    message = hits[0]["message"]
    assert message.startswith(f"lab-host: instance m1: field env: env sets {name}, which looks like a secret.")
    assert "written into the unit file (mode 0644) and shown by systemctl show" in message
    assert f"Fix: move {name} to secret_env" in message


def test_secret_env_reaches_the_plan_by_name_only():
    rep = report(instances=[with_(INSTANCE, secret_env={"HF_TOKEN": "hf_secret_value_123"})])
    assert rep["findings"] == []
    entry = rep["plan"]["instances"][0]
    assert entry["secret_env_names"] == ["HF_TOKEN"]
    assert entry["environment_file"] == "/etc/volta/secrets/m1.env"
    assert "hf_secret_value_123" not in repr(rep)


def test_llamacpp_with_secret_env_gets_an_environment_file():
    inst = with_(INSTANCE, engine="llamacpp", model="/srv/m.gguf", quantization="gguf", secret_env={"HF_TOKEN": "x"})
    entry = report(instances=[inst])["plan"]["instances"][0]
    assert entry["environment_file"] == "/etc/volta/secrets/m1.env"
    assert entry["api_key_file"] == "/etc/volta/secrets/m1.key"
    no_secret = report(instances=[with_(inst, secret_env={})])["plan"]["instances"][0]
    assert no_secret["environment_file"] is None


@pytest.mark.parametrize(
    ("secret_env", "text"),
    [
        ("HF_TOKEN=x", "secret_env is not a mapping of names to values."),
        ({"A B": "x"}, "secret_env name 'A B' is not a valid environment variable name."),
        ({"HF_TOKEN": "hf_x\nUser=root"}, "the value of HF_TOKEN contains the control character(s) '\\n' (not shown)."),
        ({"HF_TOKEN": ["x"]}, "the value of HF_TOKEN is a list, not a string (not shown)."),
        ({"VLLM_API_KEY": "x"}, "VLLM_API_KEY is also set by volta.serving."),
        ({"CUDA_VISIBLE_DEVICES": "0"}, "CUDA_VISIBLE_DEVICES is also set by volta.serving."),
        ({"HF_HOME": "/x"}, "HF_HOME is also set by env."),
    ],
)
def test_bad_secret_env_is_refused_without_showing_values(secret_env, text):
    rep = report(instances=[with_(INSTANCE, secret_env=secret_env, env={"HF_HOME": "/srv/hf"})])
    hits = [f for f in errors(rep) if f["field"] == "secret_env"]
    assert len(hits) == 1, rep["findings"]
    assert f"lab-host: instance m1: field secret_env: {text}" in hits[0]["message"]
    assert "hf_x" not in hits[0]["message"]
    assert rep["plan"]["instances"] == []


# --- volta_secrets_dir and volta_engines_root ----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/etc", "is a directory other programs use"),
        ("/etc/", "is a directory other programs use"),
        ("/etc/ssl/private", "is a directory other programs use"),
        ("/tmp", "is a directory other programs use"),
        ("/", "is a directory other programs use"),
        ("etc/volta/secrets", "is not an absolute path"),
        ("/etc/volta/../ssl", "is not a normalised path (no //, . or ..)"),
        ("/etc//ssl", "is not a normalised path (no //, . or ..)"),
        ("/etc/volta/secrets\n", "contains whitespace or control characters"),
    ],
)
def test_secrets_dir_must_be_a_dedicated_directory(path, problem):
    rep = report(secrets_dir=path)
    hits = [f for f in errors(rep) if f["field"] == "volta_secrets_dir"]
    assert len(hits) == 1, rep["findings"]
    assert hits[0]["message"].startswith(
        f"lab-host: host-wide: field volta_secrets_dir: volta_secrets_dir {path!r} {problem}."
    )
    assert "Fix: use a directory of its own, such as /etc/volta/secrets (the default)." in hits[0]["message"]


@pytest.mark.parametrize("path", ["/etc/volta/secrets", "/srv/volta-secrets/", "/var/lib/volta/keys"])
def test_dedicated_secrets_dirs_pass(path):
    assert _inputs.check_secrets_dir("h", path) == []


@pytest.mark.parametrize("path", ["opt/volta", "/opt/volta engines", "/opt/./volta"])
def test_engines_root_must_be_an_absolute_path(path):
    rep = report(engines_root=path)
    hits = [f for f in errors(rep) if f["field"] == "volta_engines_root"]
    assert len(hits) == 1, rep["findings"]
    assert f"volta_engines_root {path!r} " in hits[0]["message"]


@pytest.mark.parametrize(
    ("profile", "text"),
    [
        ({"flags": ["--enforce-eager\nExecStartPre=/bin/sh"]}, "is not a one-line string"),
        ({"program": "venv/bin/vllm\n"}, "is not a one-line string"),
        ({"env": {"A B": "1"}}, "env names ['A B'] are not valid environment variable names"),
        ({"env": {"HF_HOME": "/x\n"}}, "is not a one-line string"),
    ],
)
def test_profile_overrides_with_control_characters_are_refused(profile, text):
    rep = report(profiles={"vllm": profile})
    hits = [f for f in errors(rep) if f["field"] == "preflight_engine_profiles"]
    assert len(hits) == 1, rep["findings"]
    assert "profile override for 'vllm' is not usable (" in hits[0]["message"]
    assert text in hits[0]["message"]
