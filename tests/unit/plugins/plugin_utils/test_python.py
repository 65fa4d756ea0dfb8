# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the Python of each engine per platform and the glibc floors (plugin_utils/_python.py).

Ground truth: the archives' python3 and libc6 (Ubuntu jammy/noble, Debian bookworm), the real
Requires-Python of vLLM 0.21.0 and torch 2.10.0/2.11.0 (tests/real/test_python_support.py checks the
table against them), and 1Cat-vLLM's wheel name (cp312-cp312-linux_x86_64).
"""

from __future__ import annotations

import pytest
from ansible_collections.volta.serving.plugins.filter import engine_python as plugin
from ansible_collections.volta.serving.plugins.plugin_utils import _python
from ansible_collections.volta.serving.plugins.plugin_utils._rules_software import check_platform

VLLM = {"engine": "vllm", "engine_version": "0.21.0", "torch_version": "2.11.0"}
ONECAT = {"engine": "onecat", "engine_version": "1.5.1", "torch_version": "2.10.0",
          "wheel": "1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl", "variable": "engine_onecat_python"}
DEBIAN12 = {"distribution": "Debian", "version": "12.8"}
JAMMY = {"distribution": "Ubuntu", "version": "22.04"}
NOBLE = {"distribution": "Ubuntu", "version": "24.04"}


@pytest.mark.parametrize(
    ("platform", "engine", "source", "request_", "packages"),
    [
        (DEBIAN12, VLLM, "distribution", "python3.11", ["python3.11", "python3.11-dev"]),
        (JAMMY, VLLM, "distribution", "python3.10", ["python3.10", "python3.10-dev"]),
        (NOBLE, VLLM, "distribution", "python3.12", ["python3.12", "python3.12-dev"]),
        (NOBLE, ONECAT, "distribution", "python3.12", ["python3.12", "python3.12-dev"]),
        # 1Cat-vLLM's wheel is cp312 only: uv's CPython where the distribution has another Python.
        (DEBIAN12, ONECAT, "uv", "cpython-3.12.16", []),
        (JAMMY, ONECAT, "uv", "cpython-3.12.16", []),
        # A platform whose Python is not recorded: uv's pinned CPython, never a guessed package name.
        ({"distribution": "Rocky", "version": "9.4"}, VLLM, "uv", "cpython-3.12.16", []),
    ],
)
def test_auto_choice_per_platform_and_engine(platform, engine, source, request_, packages):
    choice = _python.choose({**platform, **engine})
    assert (choice["source"], choice["request"], choice["packages"]) == (source, request_, packages)
    assert choice["name"] == "python" + choice["minor"]
    assert choice["uv_version"] == ("3.12.16" if source == "uv" else "")


def test_auto_choice_says_why_with_the_recorded_range():
    choice = _python.choose({**DEBIAN12, **VLLM})
    assert choice["requires"] == "<3.15,>=3.10,>=3.10"
    assert "Debian 12.8 ships Python 3.11, which vLLM 0.21.0 supports" in choice["why"]
    assert "torch 2.11.0: >=3.10" in choice["why"]
    onecat = _python.choose({**JAMMY, **ONECAT})
    assert "Ubuntu 22.04 ships Python 3.10, which 1Cat-vLLM 1.5.1 does not support" in onecat["why"]
    assert "==3.12.* (its wheel's tag)" in onecat["why"]


def test_distribution_python_for_cuda_toolkit_needs_no_engine():
    assert _python.choose({**DEBIAN12, "engine": ""})["request"] == "python3.11"
    assert _python.choose({**JAMMY, "engine": ""})["packages"] == ["python3.10", "python3.10-dev"]


def test_explicit_interpreter_is_honoured():
    assert _python.choose({**NOBLE, **VLLM, "explicit": "python3.11"})["request"] == "python3.11"
    uv = _python.choose({**DEBIAN12, **VLLM, "explicit": "cpython-3.13.9"})
    assert (uv["source"], uv["version"], uv["name"], uv["packages"]) == ("uv", "3.13.9", "python3.13", [])
    assert "engine_python = cpython-3.13.9 (installed by uv)" in uv["why"]


@pytest.mark.parametrize(
    ("engine", "explicit", "text"),
    [
        (VLLM, "python3.9", "engine_python is python3.9 (Python 3.9), which vLLM 0.21.0 does not support "
                            "(vLLM 0.21.0: <3.15,>=3.10; torch 2.11.0: >=3.10)"),
        (VLLM, "cpython-3.15.0", "which vLLM 0.21.0 does not support"),
        (ONECAT, "python3.11", "engine_onecat_python is python3.11 (Python 3.11), which 1Cat-vLLM 1.5.1"),
        (VLLM, "python3", "is not an interpreter volta.serving installs"),
        (VLLM, "/usr/bin/python3.11", "engine_python '/usr/bin/python3.11' is not an interpreter"),
    ],
)
def test_explicit_interpreter_outside_requires_python_is_refused(engine, explicit, text):
    with pytest.raises(_python.PythonChoiceError, match="Fix: ") as err:
        _python.choose({**NOBLE, **engine, "explicit": explicit})
    assert text in str(err.value)


def test_unrecorded_release_takes_the_distribution_python_without_guessing():
    choice = _python.choose({**DEBIAN12, "engine": "vllm", "engine_version": "0.33.0", "torch_version": "2.14.0"})
    assert (choice["request"], choice["requires"]) == ("python3.11", "")
    assert "Requires-Python of vLLM 0.33.0 is not recorded" in choice["why"]


def test_uv_pin_outside_the_range_or_unreadable_is_refused():
    with pytest.raises(_python.PythonChoiceError, match=r"engine_python_uv_version '3.11.9' is not one it supports"):
        _python.choose({**DEBIAN12, **ONECAT, "uv_version": "3.11.9"})
    with pytest.raises(_python.PythonChoiceError, match=r"an X.Y.Z CPython"):
        _python.choose({**JAMMY, **ONECAT, "uv_version": "3.12"})


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("1cat_vllm-1.5.1-cp312-cp312-linux_x86_64.whl", "==3.12.*"),
        ("x-1.0-cp313-cp313-manylinux_2_28_x86_64.whl", "==3.13.*"),
        ("vllm-0.21.0-1-cp38-abi3-manylinux_2_24_x86_64.whl", "==3.8.*"),
        ("x-1.0-py3-none-any.whl", None),
        ("", None),
    ],
)
def test_wheel_requires_python(filename, expected):
    assert _python.wheel_requires_python(filename) == expected


def test_onecat_without_a_wheel_name_reads_the_release_wheel_name():
    requires, _why = _python.engine_requires("onecat", "1.5.1", "2.10.0")
    assert requires == "==3.12.*,>=3.10"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("glibc 2.36\n", "2.36"),  # getconf GNU_LIBC_VERSION on Debian 12
        ("ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\nCopyright (C) 2022", "2.36"),
        ("ldd (Ubuntu GLIBC 2.39-0ubuntu8.12) 2.39", "2.39"),
        ("getconf: Unrecognized variable `GNU_LIBC_VERSION'", None),  # musl
        ("", None),
    ],
)
def test_parse_glibc(text, expected):
    assert _python.parse_glibc(text) == expected


def test_glibc_below_compares_numerically():
    assert _python.glibc_below("2.36", "2.38")
    assert not _python.glibc_below("2.39", "2.38")
    assert not _python.glibc_below("2.38", "2.38")
    assert not _python.glibc_below("2.100", "2.38")


def _ctx(platform, pythons=None):
    return {"host": "h", "platform": platform, "engine_pythons": pythons or {}, "uv_python": "", "onecat_wheel": "",
            "engine_versions": {"vllm": {"version": "0.21.0", "torch_version": "2.11.0"},
                                "onecat": {"version": "1.5.1", "torch_version": "2.10.0"}}}


def _inst(name, engine):
    return {"name": name, "engine": engine}


def test_onecat_refused_on_every_glibc_below_2_38_naming_os_glibc_and_fix():
    ctx = _ctx({"distribution": "Ubuntu", "version": "22.04", "glibc": "2.35"})
    found = check_platform([_inst("a", "onecat"), _inst("b", "onecat"), _inst("c", "vllm")], ctx)
    assert [(f["rule"], f["instance"]) for f in found] == [("glibc-too-old", "a"), ("glibc-too-old", "b")]
    message = found[0]["message"]
    assert message.startswith("h: instance a: field engine: 1Cat-vLLM needs glibc >= 2.38, but Ubuntu 22.04 "
                              "has glibc 2.35.")
    assert "GLIBC_2.38' not found" in message
    assert "Fix: run 1Cat-vLLM on Ubuntu 24.04 or newer" in message
    assert "upstream vLLM built from source" in message
    assert "llama.cpp" in message


def test_onecat_passes_on_ubuntu_2404_and_vllm_on_debian12():
    assert check_platform([_inst("a", "onecat")], _ctx({**NOBLE, "glibc": "2.39"})) == []
    assert check_platform([_inst("a", "vllm")], _ctx({**DEBIAN12, "glibc": "2.36"})) == []


def test_no_platform_input_means_no_platform_check():
    assert check_platform([_inst("a", "onecat"), _inst("b", "vllm")], _ctx(None)) == []


def test_explicit_onecat_python_is_checked_even_without_the_platform():
    found = check_platform([_inst("a", "onecat")], _ctx(None, {"onecat": "python3.11"}))
    assert [(f["rule"], f["field"], f["severity"]) for f in found] == [
        ("python-unsupported", "engine_onecat_python", "error")]
    assert "Fix: leave engine_onecat_python empty" in found[0]["message"]


def test_filter_returns_the_choice_or_the_problem():
    assert set(plugin.FilterModule().filters()) == {"engine_python_choice", "engine_python_lines"}
    good = plugin.engine_python_choice({**DEBIAN12, **VLLM})
    assert (good["problem"], good["request"]) == ("", "python3.11")
    bad = plugin.engine_python_choice({**DEBIAN12, **VLLM, "explicit": "python3.9"})
    assert bad["request"] == ""
    assert "does not support" in bad["problem"]
    with pytest.raises(Exception, match="expected a mapping"):
        plugin.engine_python_choice("python3.11")


def test_the_report_says_each_engines_python_and_where_it_comes_from():
    pythons = {"vllm": plugin.engine_python_choice({**DEBIAN12, **VLLM}),
               "onecat": {"source": "uv", "version": "3.12", "request": "cpython-3.12.16", "why": "the wheel is cp312"}}
    lines = plugin.engine_python_lines(pythons, host="server-a", python_dir="/opt/volta/python")
    assert lines[0].startswith("server-a: vllm runs on Python 3.11 (python3.11, the distribution's package): Debian")
    assert lines[1] == ("server-a: onecat runs on Python 3.12 (cpython-3.12.16, installed by uv into "
                        "/opt/volta/python): the wheel is cp312")
    assert plugin.engine_python_lines({}, host="server-a", python_dir="/x") == []
    with pytest.raises(Exception, match="expected a mapping of engines"):
        plugin.engine_python_lines([], host="server-a", python_dir="/x")


def test_requires_python_read_from_the_metadata_replaces_the_record():
    newer = {"engine": "vllm", "engine_version": "0.40.0", "torch_version": "2.11.0", "requires_python": ">=3.12"}
    with pytest.raises(_python.PythonChoiceError) as err:
        _python.choose({**DEBIAN12, **newer, "explicit": "python3.11", "variable": "engine_python (auto)"})
    assert "engine_python (auto) is python3.11 (Python 3.11), which vLLM 0.40.0 does not support " \
           "(vLLM 0.40.0: >=3.12 (its metadata); torch 2.11.0: >=3.10)" in str(err.value)
    assert _python.choose({**DEBIAN12, **newer})["request"] == "cpython-3.12.16"
