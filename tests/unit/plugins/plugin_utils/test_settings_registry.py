# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings registry (plugins/plugin_utils/settings_checks/<role>.yml) and its kinds (_settings_kinds.KINDS).

Every option of every public role's argument spec has an entry naming a check that exists; every checker
refuses what nginx, systemd or a shell would read as syntax (a newline, ; { } # or a quote), each with why and
fix; each kind takes its good values and refuses its bad ones with its message. test_no_entry_is_todo fails
while a role's entries are still todo (the settings of that role are then checked for their type only).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible_collections.volta.serving.plugins.plugin_utils import _settings
from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import KINDS, NEEDS_WHY, QUOTED

REPO = Path(__file__).resolve().parents[4]
ROLES = sorted(p.name for p in (REPO / "roles").iterdir()
               if not p.name.startswith("_") and (p / "meta" / "argument_specs.yml").is_file())
INJECTIONS = ("\n", ";", "{", "}", "#", '"', "'", "10.0.0.1\nlisten 80", "10.0.0.1; location /x {", "x}", "x#",
              'x"', "/srv/x\nExecStartPre=+/bin/sh")  # fmt: skip
CONTROL = ("\n", "10.0.0.1\nlisten 80", "/srv/x\nExecStartPre=+/bin/sh", "a\rb", "a\x00b")


def options(role):
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return spec["argument_specs"]["main"]["options"]


def entries(role):
    path = REPO / "plugins" / "plugin_utils" / "settings_checks" / f"{role}.yml"
    return yaml.safe_load(path.read_text()) or {} if path.is_file() else None


def every_entry():
    """(role, option, its spec, its entry) for every option of every public role."""
    rows = []
    for role in ROLES:
        table = entries(role) or {}
        rows.extend((role, name, spec, table.get(name)) for name, spec in options(role).items())
    return rows


def checked():
    """The entries with a checker to feed (not todo, not none), as pytest params."""
    return [pytest.param(role, name, spec, entry, id=f"{role}.{name}") for role, name, spec, entry in every_entry()
            if isinstance(entry, dict) and entry.get("check") not in ("todo", "none", None)]


def test_the_public_roles_are_found():
    assert {"router", "engine", "firewall", "exporters", "prometheus", "preflight"} <= set(ROLES)
    assert tuple(ROLES) == _settings.PUBLIC_ROLES


@pytest.mark.parametrize("role", ROLES)
def test_every_public_role_has_a_registry_file(role):
    assert entries(role) is not None, f"plugins/plugin_utils/settings_checks/{role}.yml is missing"


@pytest.mark.parametrize("role", ROLES)
def test_every_option_has_an_entry_and_every_entry_an_option(role):
    table, spec = entries(role) or {}, options(role)
    assert sorted(set(spec) - set(table)) == [], f"{role}: options without a registry entry"
    assert sorted(set(table) - set(spec)) == [], f"{role}: registry entries of no option (renamed or removed?)"


@pytest.mark.parametrize("role", ROLES)
def test_every_entry_names_a_known_check(role):
    """An unknown kind or function, none or free_text without why, or a type check of a non-scalar option."""
    problems = []
    for name, spec in options(role).items():
        entry = (entries(role) or {}).get(name)
        if isinstance(entry, dict) and entry.get("check") == "todo":
            continue
        problem = _settings.entry_problem(role, name, entry)
        if not problem and entry["check"] == "type" and spec.get("type", "str") not in ("int", "bool", "float"):
            problem = f"{role}: {name}: check type is for int, bool and float options (this one is {spec.get('type')})"
        if problem:
            problems.append(problem)
    assert problems == []


def test_no_entry_is_todo():
    """Fails while any role's entries are still todo: each is checked for its type only until then."""
    todo = [f"{role}.{name}" for role, name, _spec, entry in every_entry()
            if isinstance(entry, dict) and entry.get("check") == "todo"]
    assert todo == []


def fed(spec, value):
    """*value* in the shape the option takes: a list's entry, a mapping's value."""
    kind = spec.get("type", "str")
    if kind == "list":
        return [value]
    if kind == "dict":
        return {"x": value}
    return value


def refusal(spec, entry, value):
    """What the settings action says of *value* for this option: its type check, then its checker."""
    problem = _settings.type_problem(value, spec) or _settings.choices_problem(value, spec)
    if problem or entry["check"] == "type":
        return problem
    return _settings.resolve(entry["check"])(value)


@pytest.mark.parametrize(("role", "name", "spec", "entry"), checked())
def test_every_checker_refuses_syntax_with_why_and_fix(role, name, spec, entry):
    values = CONTROL if entry["check"] in QUOTED else INJECTIONS
    passed = []
    for value in values:
        problem = refusal(spec, entry, fed(spec, value))
        if isinstance(problem, str):
            problem = (problem, "see the role's argument spec")
        if not (problem and all(isinstance(p, str) and p.strip() for p in problem)):
            passed.append(value)
    assert passed == [], f"{role}: {name} ({entry['check']}) takes {passed!r}"


SECRET = "s3cret-value-never-shown-0123456789;\n"  # noqa: S105  a test value, asserted never shown


def secrets():
    return [pytest.param(name, spec, id=f"{role}.{name}") for role, name, spec, _entry in every_entry()
            if next(r for r in _settings.registry()[name] if r[0] == role)[3]]


def test_the_secrets_are_known():
    names = {p.values[0] for p in secrets()}
    assert {"api_gateway_keys", "api_gateway_host_key", "api_gateway_tls_private_key", "volta_models",
            "engine_service_ray_token"} <= names


@pytest.mark.parametrize(("name", "spec"), secrets())
def test_a_secret_is_never_in_a_refusal(name, spec):
    for value in (SECRET, fed(spec, SECRET), [SECRET], {"x": SECRET}, 12345678901234567890):
        for message in _settings.check_variable("h1", name, value):
            assert "s3cret-value-never-shown" not in message and "12345678901234567890" not in message, message


# ---------------------------------------------------------------------------------------------------------------
# Each kind: good values pass, bad ones are refused with their message.
# ---------------------------------------------------------------------------------------------------------------

GOOD = {
    "address": ["10.0.0.5", "2001:db8::5", "::1", "gpu1", "gpu1.example.com", "a-b.c"],
    "address_list": [[], ["10.0.0.5", "gpu1.example.com"]],
    "cidr": ["10.0.0.0/8", "10.0.0.5", "2001:db8::/32", "0.0.0.0/0"],
    "cidr_list": [[], ["10.0.0.0/8", "192.0.2.7"]],
    "port": [1, 22, 8000, 65535, "8000"],
    "port_list": [[], [22, 8000], ["8000"]],
    "nginx_size": ["64m", "1g", "0", 1024, "10K"],
    "nginx_seconds": [5, "60", 3600],
    "nginx_rate": ["10r/s", "30r/m"],
    "abs_path": ["/srv/volta", "/", "/var/cache/volta/engines"],
    "abs_path_list": [[], ["/srv/data", "/tmp"]],
    "account": ["volta", "_apt", "node-exporter", "video"],
    "account_list": [[], ["video", "render"]],
    "word": ["cu126", "vllm", "sm_70", "1.5.1", "fused_moe_int64_offsets"],
    "word_list": [[], ["torchvision", "torchaudio"]],
    "url": ["https://pypi.org/simple", "http://127.0.0.1:9/simple", "https://user@mirror.example:8443/a/b?c=d"],
    "version_pin": ["0.21.0", "12.8.1-1", "2.7.1+cu126", "1:580.95.05-0ubuntu1", "b4567", 580, "580"],
    "sha256": ["a" * 64, "0123456789ABCDEF" * 4],
    "free_text": ["any text; with {braces} # and \"quotes\"", ""],
    "command": ["nvidia-smi", "/usr/bin/nvidia-smi"],
    "url_or_abs_path": ["https://example.com/a.whl", "/srv/wheels/a.whl"],
    "rel_path": ["vendor/llama.cpp", "src"],
    "argv": [[], ["-DCMAKE_CUDA_ARCHITECTURES=70;75", "echo", 'a "quoted" arg']],
    "cuda_architectures": ["70", "70;75", "70-real;80-virtual", "native", 70],
}
BAD = {
    "address": [("0.0.0.0; location /x {", "is not an IPv4 or IPv6 address or a host name: it contains ' ' ';' '{', so "
                 "nginx would read it as configuration"),
                ("fe80::1%eth0", "carries a zone id (%...), which nginx refuses"),
                ("10.0.0.5:8000", "is not an IPv4 or IPv6 address or a host name"),
                ("[::1]", "is not an IPv4 or IPv6 address or a host name"),
                ("10.0.0.0/8", "is not an IPv4 or IPv6 address or a host name"),
                ("1.2.3", "is not an IPv4 or IPv6 address or a host name"),
                ("-gpu", "is not an IPv4 or IPv6 address or a host name"),
                ("", "is not an IPv4 or IPv6 address or a host name"),
                (7, "is a number, not an IPv4 or IPv6 address or a host name written as text"),
                ("10.0.0.5\n", "contains the control character(s) '\\n'")],
    "address_list": [("10.0.0.5", "is one text, not a list of addresses"),
                     (["10.0.0.5", "a b"], "entry 2 of the list:")],
    "cidr": [("10.0.0.2/8", "has host bits set: it would be widened to 10.0.0.0/8 (16777216 addresses)"),
             ("10.0.0.0/33", "is not an IPv4 or IPv6 network"),
             ("any", "is not an IPv4 or IPv6 network"),
             ("10.0.0.0/8;", "is not a network: it contains ';'"),
             (None, "is empty (null: nothing after the colon), not a network written as text")],
    "cidr_list": [("10.0.0.0/8", "is one text, not a list of networks"),
                  ([["10.0.0.0/8"]], "entry 1 of the list: [\"10.0.0.0/8\"] is a list, not a network"),
                  (["10.0.0.0/8", "192.168.1.1/16"], "entry 2 of the list: \"192.168.1.1/16\" has host bits set: it "
                   "would be widened to 192.168.0.0/16")],
    "port": [("ssh", '"ssh" is not a whole number'), (0, "is not a TCP port (1-65535)"),
             (65536, "is not a TCP port (1-65535)"), (True, "is not a whole number"), ("22\n", "is not a whole number"),
             (22.0, "is not a whole number")],
    "port_list": [(22, "22 is a single number, not a list of ports"), ("22", '"22" is one text, not a list of ports'),
                  ([22, "ssh"], 'entry 2 of the list: "ssh" is not a whole number')],
    "nginx_size": [("64m; location /x {", "is not an nginx size: it contains"), ("64 MB", "is not an nginx size"),
                   ("1t", "is not an nginx size, so nginx would refuse it")],
    "nginx_seconds": [("5s", '"5s" is not a whole number of seconds (without a unit)'),
                      (0, "is not a whole number of seconds"), ("60;", "it contains ';'")],
    "nginx_rate": [("10r/h", "is not an nginx rate"), ("10r/s burst=5", "is not an nginx rate: it contains ' '")],
    "abs_path": [("srv/volta", "is not an absolute path (it must start with /)"),
                 ("/srv/my models", "is not a path: it contains ' '"),
                 ("/srv/x\nExecStartPre=+/bin/sh", "contains the control character(s) '\\n'"),
                 (["/srv"], "is a list, not a path written as text")],
    "abs_path_list": [("/srv", "is one text, not a list of paths"), (["/srv", "tmp"], "entry 2 of the list:")],
    "account": [("Volta", "is not a user or group name"), ("vol ta", "is not an account name: it contains ' '"),
                ("a" * 33, "is not a user or group name"), ("1volta", "is not a user or group name")],
    "account_list": [("video", "is one text, not a list of account names")],
    "word": [("a b", "is not a name: it contains ' '"), ("../x", "is not a plain name"), ("-x", "is not a plain name"),
             ("", "is not a plain name")],
    "word_list": [("torchvision", "is one text, not a list of names"), (["ok", "x;y"], "entry 2 of the list:")],
    "url": [("ftp://mirror/simple", "is not an http:// or https:// URL"), ("https://a/b c", "is not a URL: it "
            "contains ' '"), ("https://a/{x}", "is not a URL: it contains '{' '}'"), ("pypi.org/simple",
            "is not an http:// or https:// URL"), ("https://a/\n", "contains the control character(s) '\\n'")],
    "version_pin": [("latest ", "is not a version: it contains ' '"), ("1.0;rm", "is not a version: it contains ';'"),
                    ("../1", "is not a version (letters, digits, . + ~ : _ - only)"), (True, "is a boolean")],
    "sha256": [("abc", "is not a sha256 (64 hex digits)"), ("g" * 64, "is not a sha256"),
               ("a" * 64 + "\n", "contains the control character(s) '\\n'")],
    "free_text": [("a\nb", "contains the control character(s) '\\n'"), (5, "is a number, not text")],
    "command": [("nvidia-smi; reboot", "is not a name: it contains ' ' ';'"), ("nvidia smi", "it contains ' '")],
    "url_or_abs_path": [("wheels/a.whl", "is not an http:// or https:// URL"), ("/srv/a b.whl", "it contains ' '")],
    "rel_path": [("/etc", "is not a path inside the directory"), ("a/../../etc", "is not a path inside the directory")],
    "argv": [("-DX=1", "is one text, not a list of arguments"), (["ok", "a\nb"], "entry 2 of the list:")],
    "cuda_architectures": [("70/../x", "is not a list of CUDA architectures"), ("70; 75", "it contains ' '")],
}


def test_every_kind_has_a_table():
    base = {k for k in KINDS if not k.endswith("_or_empty")} - {"type", "none"}
    assert sorted(base - set(GOOD)) == [] and sorted(base - set(BAD)) == []


@pytest.mark.parametrize(("kind", "value"), [(k, v) for k, values in GOOD.items() for v in values])
def test_a_kind_takes_its_good_values(kind, value):
    assert KINDS[kind](value) is None


@pytest.mark.parametrize(("kind", "value", "why"), [(k, v, w) for k, rows in BAD.items() for v, w in rows])
def test_a_kind_refuses_a_bad_value_saying_why_and_fix(kind, value, why):
    problem = KINDS[kind](value)
    assert problem is not None, value
    text, fix = problem
    assert why in text, text
    assert fix.strip(), fix


@pytest.mark.parametrize("kind", sorted(k for k in KINDS if k.endswith("_or_empty")))
def test_the_or_empty_kinds_take_empty_and_check_the_rest(kind):
    assert KINDS[kind]("") is None
    assert KINDS[kind]("a b\n") is not None


def test_the_kinds_that_take_syntax_need_a_why():
    assert set(QUOTED) <= set(NEEDS_WHY) and "none" in NEEDS_WHY


def test_the_nginx_kinds_use_the_gateway_patterns():
    from ansible_collections.volta.serving.plugins.plugin_utils import _gateway, _settings_kinds

    assert _settings_kinds.SIZE_RE is _gateway.SIZE_RE
    assert _settings_kinds.SECONDS_RE is _gateway.SECONDS_RE
    assert _settings_kinds.RATE_RE is _gateway.RATE_RE


# ---------------------------------------------------------------------------------------------------------------
# The settings action's composition: host names, types, messages, secrets.
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpu1", "gpu-01.example.com", "server_a", "a" * 253])
def test_a_safe_host_name_passes(name):
    assert _settings.host_name_problem(name) is None


@pytest.mark.parametrize("name", ["gpu b", "x;server evil.example backup;#", "../x", "a..b", ".hidden", "-x",
                                  "a" * 254, "gpu{1}", 'gpu"1', "gpu#1", "gpu\n1"])
def test_an_unsafe_host_name_is_refused(name):
    message = _settings.host_name_problem(name)
    assert message and "inventory host name:" in message
    assert "the name reaches the router's nginx include lines and file names" in message
    assert "Fix: rename the host in the inventory (for example gpu-b) and set ansible_host to its address." in message
    assert "\n" not in message


def test_a_type_mistake_names_host_variable_why_and_fix():
    [message] = _settings.check_host("gpu1", {"engine_keep": "two"})
    assert message == ('gpu1: engine_keep: "two" is not a whole number. Fix: set engine_keep to a whole number '
                       "(previous installs kept per flavour next to the one in service (at least 1)), e.g. 2.")
    [message] = _settings.check_host("gpu1", {"firewall_ssh_port": "ssh"})
    assert message.startswith('gpu1: firewall_ssh_port: "ssh" is not a whole number') and "e.g. 22." in message


@pytest.mark.parametrize(("name", "value", "text"), [
    ("firewall_extra_tcp_ports", 8080, "8080 is a single value, not a list. Fix: write firewall_extra_tcp_ports as a "
     "YAML list"),
    ("engine_keep", True, "true is not a whole number"),
    ("engine_keep", "2", None),
    ("nvidia_driver_reboot_ok", "yes", None),
    ("nvidia_driver_reboot_ok", "maybe", '"maybe" is not a boolean. Fix: set nvidia_driver_reboot_ok to true or false'),
    ("nvidia_driver_branch", 580, None),
    ("nvidia_driver_kernel_module", "closed", '"closed" is not one of proprietary, open'),
    ("model_root", None, "is empty (null: nothing is written after the colon)"),
    ("engine_flavours", ["vllm", "onecat"], None),
    ("engine_flavours", ["vllm", 5], "entry 2 of the list: 5 is a number, not a name written as text"),
    ("engine_flavours", ["vllm", ["x"]], 'entry 2 of the list: ["x"] is a list, not text'),
    ("engine_cache_dir", "/srv/x\nExecStartPre=+/bin/sh", "contains the control character(s) '\\n'"),
])  # fmt: skip
def test_the_type_and_the_check_of_a_variable(name, value, text):
    messages = _settings.check_variable("h1", name, value)
    if text is None:
        assert messages == []
    else:
        assert len(messages) == 1 and text in messages[0], messages
        assert messages[0].startswith(f"h1: {name}: ") and ". Fix: " in messages[0]


def test_a_secret_of_the_wrong_type_is_not_shown():
    [message] = _settings.check_variable("h1", "api_gateway_host_key", ["k" * 40])
    assert "kkkk" not in message and "(not shown: a secret)" in message


def test_the_unset_variables_and_the_others_are_not_checked():
    assert _settings.check_host("h1", {}) == []
    assert _settings.check_variable("h1", "not_a_registry_variable", "a b\n") == []


def test_a_registry_function_is_resolved_and_a_wrong_one_refused():
    assert _settings.resolve("address") is KINDS["address"]
    assert callable(_settings.resolve("_settings_kinds:check_address"))
    for wrong in ("nope", "_settings_kinds:nope", "_nomodule:f", "os:system", "_settings_kinds:KINDS"):
        with pytest.raises(_settings.RegistryError):
            _settings.resolve(wrong)


def test_the_messages_are_one_line_each():
    messages = _settings.check_host("h1", {"engine_cache_dir": "/a\nb", "engine_pypi_index_url": "x\ny"})
    assert len(messages) == 2 and all("\n" not in m for m in messages)
