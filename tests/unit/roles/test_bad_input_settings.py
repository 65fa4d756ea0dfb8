# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml on the controller (volta_preflight_detect=false): bad settings stop the run before any change.

Each host makes one mistake in a setting or its inventory name; one host makes none. The settings action
(volta.serving.settings) names each with host, variable, why and fix, never a secret, and nothing crashes or
passes silently. Three runs, because the first refusal of a play stops every host:
- SERVING: the serving hosts' settings, refused by the action that preflight runs first, before the plan;
- OTHERS: the hosts preflight does not check (a name a host pattern cannot hold, routers and monitoring hosts
  only), refused by the settings play;
- TYPO: an exporters_ variable misspelt on a serving host, refused by preflight's unknown-variable check.
No run reaches a host or the network.
"""

from __future__ import annotations

import pytest
from bad_input import flat, run
from test_preflight_controller import KEY, host

SECRET = "do-not-show-this-key-0123456789abcdef"  # noqa: S105  a test value, asserted never shown


def serving_hosts():
    return {
        "good": host(),
        "sshport": host(firewall_ssh_port="ssh"),
        "sshfloat": host(firewall_ssh_port=22.5),
        "../x": host(),
        "newline": host(engine_cache_dir="/var/cache/volta\nExecStartPre=+/bin/sh -c id"),
        "extraport": host(firewall_extra_tcp_ports=8080),
        "torchcuda": host(engine_vllm_torch_cuda="cu126; rm -rf /"),
        "index": host(engine_pypi_index_url="ftp://mirror.example/simple"),
        "uvsha": host(engine_uv_sha256="abc"),
        "keep": host(engine_keep="two"),
        "keepbool": host(engine_keep=True),
        "reboot": host(nvidia_driver_reboot_ok="maybe"),
        "nullroot": host(model_root=None),
        "pkgtext": host(cuda_toolkit_build_packages="build-essential"),
        "cmaketext": host(engine_llamacpp_cmake_args="-DGGML_NATIVE=OFF"),
        "enginesroot": host(volta_engines_root="opt/volta/engines"),
        "subdir": host(engine_llamacpp_source_subdir="../../etc"),
        "repourl": host(nvidia_driver_cuda_repo_url="https://developer.download.nvidia.com/ repo/"),
        "smi": host(nvidia_driver_nvidia_smi="nvidia-smi; reboot"),
        "hostkey": host(api_gateway_host_key=[SECRET]),
        "lab": host(volta_lab="yes please"),
        "archs": host(engine_llamacpp_cuda_architectures="70/../../x"),
        # A template naming a role's default (engine_onecat_version) is rendered with it, then checked.
        "wheelurl": host(engine_onecat_wheel_url="https://example.com/1cat-{{ engine_onecat_version }}.whl; x"),
    }


SERVING = {
    # The firewall's own check (settings_checks/firewall.yml) says why and fix; its type is the action's.
    "sshport": 'sshport: firewall_ssh_port: "ssh" is not a whole number',
    "sshfloat": "sshfloat: firewall_ssh_port: 22.5 is not a whole number",
    "../x": '../x: inventory host name: "../x" is not a safe host name',
    "newline": 'newline: engine_cache_dir: "/var/cache/volta\\nExecStartPre=+/bin/sh -c id" contains the control '
               "character(s) '\\n', so it would end the line it is written on and start a new one. Fix: set "
               "engine_cache_dir to an absolute path",
    "extraport": "extraport: firewall_extra_tcp_ports: 8080 is a single value, not a list. Fix: write "
                 "firewall_extra_tcp_ports as a YAML list",
    "torchcuda": "torchcuda: engine_vllm_torch_cuda: \"cu126; rm -rf /\" is not a name: it contains ' ' ';'",
    "index": 'index: engine_pypi_index_url: "ftp://mirror.example/simple" is not an http:// or https:// URL. Fix:',
    "uvsha": 'uvsha: engine_uv_sha256: "abc" is not a sha256 (64 hex digits). Fix:',
    "keep": 'keep: engine_keep: "two" is not a whole number. Fix: set engine_keep to a whole number',
    "keepbool": "keepbool: engine_keep: true is not a whole number.",
    "reboot": 'reboot: nvidia_driver_reboot_ok: "maybe" is not a boolean. Fix: set nvidia_driver_reboot_ok to true or '
              "false",
    "nullroot": "nullroot: model_root: is empty (null: nothing is written after the colon). Fix: set model_root to a "
                "value",
    "pkgtext": 'pkgtext: cuda_toolkit_build_packages: "build-essential" is one text, not a list. Fix: write '
               "cuda_toolkit_build_packages as a YAML list",
    "cmaketext": 'cmaketext: engine_llamacpp_cmake_args: "-DGGML_NATIVE=OFF" is one text, not a list.',
    "enginesroot": 'enginesroot: volta_engines_root: "opt/volta/engines" is not an absolute path',
    "subdir": 'subdir: engine_llamacpp_source_subdir: "../../etc" is not a path inside the directory',
    "repourl": "repourl: nvidia_driver_cuda_repo_url: \"https://developer.download.nvidia.com/ repo/\" is not a URL: "
               "it contains ' '",
    "smi": "smi: nvidia_driver_nvidia_smi: \"nvidia-smi; reboot\" is not a name: it contains ' ' ';'",
    "hostkey": 'hostkey: api_gateway_host_key: "(not shown: a secret)" is a list, not text.',
    "lab": 'lab: volta_lab: "yes please" is not a boolean.',
    "archs": 'archs: engine_llamacpp_cuda_architectures: "70/../../x" is not a list of CUDA architectures',
    "wheelurl": "wheelurl: engine_onecat_wheel_url: \"https://example.com/1cat-1.5.1.whl; x\" is not a URL: it "
                "contains ' ' ';'",
}


def other_hosts():
    """A good serving host, a name a host pattern splits, a router and a monitoring host, each one mistake."""
    router = {"ansible_connection": "local", "router_source_address": "10.0.0.9"}
    return {"all": {"children": {
        "volta": {"hosts": {"good": host(), "gpu b": host()}},
        "volta_router": {"hosts": {"x;server evil.example backup;#": router,
                                   "router1": {**router, "router_port": 9000}}},
        "monitoring": {"hosts": {"mon1": {"ansible_connection": "local", "prometheus_retention_tme": "15d"}}},
    }}}  # fmt: skip


OTHERS = {
    "gpu b": 'gpu b: inventory host name: "gpu b" is not a safe host name (letters, digits, \'.\', \'_\' and \'-\', '
             "starting with a letter or digit, no '..', at most 253 characters): the name reaches the router's nginx "
             "include lines and file names",
    "evil": 'x;server evil.example backup;#: inventory host name: "x;server evil.example backup;#" is not a safe '
            "host name",
    "router1": "router1: host-wide: field router_port: router_port is not a variable of any volta.serving role; it is "
               "ignored.",
    "router1-fix": "Fix: did you mean router_ports?",
    "mon1": "mon1: host-wide: field prometheus_retention_tme: prometheus_retention_tme is not a variable of any "
            "volta.serving role",
    "mon1-fix": "Fix: did you mean prometheus_retention_time?",
}


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    return run(tmp_path_factory, "serving", {"all": {"children": {"volta": {"hosts": serving_hosts()}}}})


@pytest.fixture(scope="module")
def others(tmp_path_factory):
    return run(tmp_path_factory, "others", other_hosts())


@pytest.fixture(scope="module")
def typo(tmp_path_factory):
    hosts = {"good": host(), "exporters": host(exporters_listen_adress="0.0.0.0")}  # noqa: S104  never bound
    return run(tmp_path_factory, "typo", {"all": {"children": {"volta": {"hosts": hosts}}}})


@pytest.mark.parametrize("name", sorted(SERVING))
def test_each_serving_host_mistake_is_named_before_the_plan(serving, name):
    rc, out = serving
    assert rc != 0
    assert SERVING[name] in flat(out), (name, out[-6000:])


def test_the_serving_run_stops_in_preflight_before_any_change(serving):
    rc, out = serving
    assert rc != 0
    # Refused by the settings action, before the serving plan read anything (no plan error, no crash).
    for text in ("PLAY [Driver and CUDA toolkit]", "PLAY [Engines", "error(s) in the serving plan",
                 "unable to convert", "Traceback", "argument 'ssh_port'", "An unhandled exception"):
        assert text not in out, (text, out[-3000:])
    # The good host passes, and no refusal names it.
    assert "good: " not in flat(" ".join(line for line in out.splitlines() if "Fix:" in line))


def test_a_secret_is_never_shown(serving):
    assert SECRET not in serving[1]
    assert KEY not in serving[1]


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_each_router_monitoring_or_name_mistake_is_named_by_the_settings_play(others, name):
    rc, out = others
    assert rc != 0
    assert OTHERS[name] in flat(out), (name, out[-6000:])


def test_the_settings_play_stops_every_host_listing_each(others):
    rc, out = others
    text = flat(out)
    assert rc != 0
    assert "4 host(s) have incomplete settings, nothing was changed on any host" in text, out[-3000:]
    summary = text[text.index("4 host(s) have incomplete settings"):]
    assert "good:" not in summary.split("Origin:", maxsplit=1)[0]
    for text_ in ("PLAY [Driver and CUDA toolkit]", "PLAY [Fleet router]", "PLAY [Monitoring]", "Traceback"):
        assert text_ not in out, text_


def test_a_misspelt_exporters_variable_is_refused_by_preflight(typo):
    rc, out = typo
    text = flat(out)
    assert rc != 0
    assert ("exporters: host-wide: field exporters_listen_adress: exporters_listen_adress is not a variable of any "
            "volta.serving role") in text, out[-3000:]
    assert "Fix: did you mean exporters_listen_address?" in text
    assert "PLAY [Driver and CUDA toolkit]" not in out
