# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The api_gateway settings that reach the nginx configuration, checked before anything is rendered.

Pure Python, no Ansible imports. ``check_gateway(host, gateway)`` returns findings (see
``_findings.finding``); ``gateway`` is what the serving_plan action reads from the host's variables
(``GATEWAY_KEYS``). Secrets never come here: only whether the TLS certificate and key are set,
and the *shape* of each API key (``key_shapes``, see ``KEY_SHAPE_CLASSES``), never the key.
Every value is pasted into nginx directives, so each must be exactly of its syntax (a full match):
an unchecked ``64m; location /open/ { ... } #`` once served a path without the key.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.volta.serving.plugins.plugin_utils._cidr import check_cidr
from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding
from ansible_collections.volta.serving.plugins.plugin_utils._inputs import control_characters

GATEWAY_KEYS = (
    "listen_address",
    "client_max_body_size",
    "metrics_allow",
    "tls_certificate",
    "tls_private_key",
    "allow_plain_http",
    "firewall_enabled",
    "api_cidrs",
    "metrics_cidrs",
    "router_cidrs",
    "proxy_timeouts",
    "unauthorized_rate",
    "unauthorized_burst",
    "key_shapes",
    "key_types",
    "metrics_reused",
)
# nginx sizes: a number of bytes, or with k/K, m/M, g/G (ngx_parse_offset).
SIZE_RE = re.compile(r"\d{1,12}[kKmMgG]?")
SECONDS_RE = re.compile(r"[1-9]\d{0,6}")
# nginx limit_req_zone rate: requests per second or per minute (ngx_http_limit_req_zone).
RATE_RE = re.compile(r"[1-9]\d{0,5}r/[sm]")
BURST_MAX = 100000
# An API key: what nginx's key map and vLLM compare after "Bearer " (RFC 6750 token68
# characters), at least KEY_MIN_LENGTH of them (openssl rand -hex 32 gives 64).
KEY_MIN_LENGTH = 32
# The shape of a key, as the serving_plan action reads it from the host's variables: every
# character of the key replaced by its class (the key itself never leaves the variables).
KEY_SHAPE_CLASSES = {"token": "a", "whitespace": " ", "other": "?"}
EVERYWHERE = "0.0.0.0/0"
# The firewall's networks that reach the gateway's public ports (roles/firewall, _firewall_plan.ports): the
# clients' (every gateway port), the scrapers' (every gateway port too: nginx lets them read /metrics, and
# every other path answers the same) and the fleet router's (the service ports). Each sees the API.
API_PORT_NETWORKS = (("api_cidrs", "firewall_api_cidrs"), ("metrics_cidrs", "firewall_metrics_cidrs"),
                     ("router_cidrs", "firewall_router_cidrs"))
# Networks that do not reach the internet: RFC 1918, loopback, link-local, CGNAT, IPv6 ULA.
NON_PUBLIC = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16",
              "100.64.0.0/10", "::1/128", "fc00::/7", "fe80::/10")
)  # fmt: skip


def _bad(host, field, text, why, fix, rule="invalid-value"):
    return finding(rule, host, None, field, text, why, fix)


def check_body_size(host, value):
    """api_gateway_client_max_body_size: nginx size syntax only."""
    if (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
        isinstance(value, str) and SIZE_RE.fullmatch(value)
    ):
        return []
    return [
        _bad(
            host,
            "api_gateway_client_max_body_size",
            f"{value!r} is not an nginx size.",
            "it is pasted into the nginx configuration as client_max_body_size; anything else there is "
            "either refused by nginx or changes the configuration (a new location without the key).",
            "write a number with an optional unit k, m or g, for example 64m.",
        )
    ]


LISTEN_WHY = "it is pasted into the nginx listen directive of every public port."


def listen_problem(value):
    """(text, fix) when *value* is no api_gateway_listen_address ("" or one IP address, no zone), else None."""
    if value == "":
        return None
    if isinstance(value, str) and "%" in value and not control_characters(value):
        return (f"{value!r} carries a zone index (%{value.partition('%')[2]}), which nginx's listen directive "
                "does not take (nginx -t refuses it, after other hosts changed)",
                "write the address without the zone (a global or unique-local IPv6 address such as fd00::5, or an "
                'IPv4 address); a link-local fe80:: address cannot be listened on alone. Or "" for every address')
    try:
        ipaddress.ip_address(value if isinstance(value, str) else "-")
    except ValueError:
        return (f"{value!r} is not an IP address",
                'write one IPv4 or IPv6 address (no port, no brackets), or "" for every address')
    return None


def check_listen_address(host, value):
    """api_gateway_listen_address: empty (every address) or one IP address, without a zone index."""
    problem = listen_problem(value)
    if not problem:
        return []
    return [_bad(host, "api_gateway_listen_address", problem[0] + ".", LISTEN_WHY, problem[1] + ".")]


def probe_base(listen_address, scheme="http"):
    """``scheme://host`` that reaches the gateway's ports on the host itself, as nginx listens.

    Every address ("", 0.0.0.0) and the IPv4 loopback: 127.0.0.1; "::" (nginx: IPv6 only): [::1]; one
    address: that address (a gateway on 10.0.0.5 only does not answer on 127.0.0.1), IPv6 in brackets.
    """
    address = str(listen_address or "").strip("[]")
    if address in ("", "0.0.0.0"):  # noqa: S104 - reads a listen address, binds nothing
        address = "127.0.0.1"
    elif address == "::":
        address = "::1"
    return f"{scheme}://[{address}]" if ":" in address else f"{scheme}://{address}"


def _metrics_entry_problem(entry):
    if isinstance(entry, str) and (control_characters(entry) or entry != entry.strip()):
        return "contains whitespace or control characters"
    _network, problem = check_cidr(entry)
    return problem["why"] if problem else None


def check_metrics_allow(host, value):
    """api_gateway_metrics_allow: a list of addresses or networks in CIDR notation."""
    if not isinstance(value, list):
        return [
            _bad(
                host,
                "api_gateway_metrics_allow",
                f"{value!r} is not a list.",
                "each entry becomes an nginx allow line of /metrics.",
                'write a list of addresses or CIDRs, for example ["10.0.0.0/8"].',
            )
        ]
    out = []
    for index, entry in enumerate(value):
        problem = _metrics_entry_problem(entry)
        if problem:
            out.append(
                _bad(
                    host,
                    f"api_gateway_metrics_allow[{index}]",
                    f"{entry!r} is not an address or CIDR ({problem}).",
                    "each entry becomes an nginx allow line of /metrics; anything else changes the configuration.",
                    "write an address such as 10.0.0.7 or a network such as 10.0.0.0/8.",
                )
            )
    return out


def check_proxy_timeouts(host, timeouts):
    """api_gateway_proxy_{connect,read,send}_timeout: whole seconds, pasted as ``<n>s``."""
    out = []
    for name, value in sorted((timeouts or {}).items()):
        text = str(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
        if not SECONDS_RE.fullmatch(text):
            out.append(
                _bad(
                    host,
                    f"api_gateway_proxy_{name}_timeout",
                    f"{value!r} is not a whole number of seconds.",
                    f"it is pasted into the nginx configuration as proxy_{name}_timeout <n>s.",
                    "write a positive integer, for example 3600.",
                )
            )
    return out


def check_tls_pair(host, gateway):
    """TLS needs both the certificate and the key; one alone used to fall back to plain HTTP silently."""
    cert, key = bool(gateway.get("tls_certificate")), bool(gateway.get("tls_private_key"))
    if cert == key:
        return []
    given, missing = ("certificate", "private_key") if cert else ("private_key", "certificate")
    return [
        _bad(
            host,
            f"api_gateway_tls_{missing}",
            f"api_gateway_tls_{given} is set but api_gateway_tls_{missing} is not.",
            "TLS is on only with both; with one of them the gateway would serve the keys over plain HTTP.",
            f"set api_gateway_tls_{missing} too (PEM, in Ansible Vault), or remove api_gateway_tls_{given}.",
        )
    ]


def _is_public(cidr):
    network, problem = check_cidr(cidr)
    if problem:
        return False  # the firewall role refuses it with its own message
    return not any(network.version == n.version and network.subnet_of(n) for n in NON_PUBLIC)


def _is_loopback(address):
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def public_networks(gateway):
    """The networks outside private ranges that reach the public ports (everyone without the firewall).

    Every firewall network that opens a gateway port counts (API_PORT_NETWORKS), each once, in order.
    """
    return [cidr for cidr, _variable in public_sources(gateway)]


def public_sources(gateway):
    """``[(network, variable)]``: each network outside private ranges that reaches the public ports, and the
    firewall variable that opens them to it (``firewall_enabled`` when the firewall is off)."""
    if _is_loopback(gateway.get("listen_address")):
        return []
    if not gateway.get("firewall_enabled", True):
        return [(EVERYWHERE, "firewall_enabled")]
    out, seen = [], set()
    for field, variable in API_PORT_NETWORKS:
        networks = gateway.get(field) or []
        for cidr in networks if isinstance(networks, list) else []:
            if _is_public(cidr) and str(cidr) not in seen:
                seen.add(str(cidr))
                out.append((cidr, variable))
    return out


def check_plain_http(host, gateway):
    """Plain HTTP to networks outside private ranges: refused unless api_gateway_allow_plain_http."""
    if gateway.get("tls_certificate") and gateway.get("tls_private_key"):
        return []
    public = public_sources(gateway)
    if not public:
        return []
    allowed = bool(gateway.get("allow_plain_http"))
    order = [variable for _field, variable in API_PORT_NETWORKS]
    variables = sorted({variable for _cidr, variable in public if variable in order}, key=order.index)
    through = f"through {' and '.join(variables)}" if variables else "the firewall is off: firewall_enabled: false"
    narrow = f"narrow {' and '.join(variables)} to private networks" if variables else "turn the firewall on"
    return [
        _bad(
            host,
            "api_gateway_tls_certificate",
            f"the public ports are open to {', '.join(str(cidr) for cidr, _v in public)} over plain HTTP ({through}).",
            "the API keys and every prompt would cross networks outside private ranges unencrypted"
            + (" (api_gateway_allow_plain_http: true says that is intended)." if allowed else "."),
            f"set api_gateway_tls_certificate and api_gateway_tls_private_key, {narrow}, "
            "or set api_gateway_allow_plain_http: true (for example behind a TLS-terminating proxy).",
            rule="plain-http-allowed" if allowed else "plain-http-public",
        )
    ]


def check_unauthorized_limit(host, rate, burst):
    """api_gateway_unauthorized_rate/_burst: pasted into limit_req_zone and limit_req."""
    out = []
    if not (isinstance(rate, str) and RATE_RE.fullmatch(rate)):
        out.append(
            _bad(
                host,
                "api_gateway_unauthorized_rate",
                f"{rate!r} is not an nginx request rate.",
                "it is pasted into the nginx configuration as the rate= of limit_req_zone (requests without "
                "the key, per client address).",
                "write a whole number of requests per second or per minute, for example 30r/m or 2r/s.",
            )
        )
    if isinstance(burst, bool) or not isinstance(burst, int) or not 0 <= burst <= BURST_MAX:
        out.append(
            _bad(
                host,
                "api_gateway_unauthorized_burst",
                f"{burst!r} is not a whole number from 0 to {BURST_MAX}.",
                "it is pasted into the nginx configuration as the burst= of limit_req.",
                "write a whole number, for example 20.",
            )
        )
    return out


# A key that is no text (plugin_utils/_api_keys.TYPE_SHAPES): what it is, as the refusal says it.
TYPE_SHAPES = {
    "<mapping>": "is a mapping, not a string (a key goes straight after the name: "
                 "api_gateway_keys: {chat: \"<key>\"}, no nested keys)",
    "<list>": "is a list, not a string (one key per instance or host: a string, not a list of keys)",
    "<number>": "is a number, not a string: YAML read it unquoted and may have changed it (leading zeros, "
                "exponents, underscores)",
    "<boolean>": "is a boolean, not a string (YAML reads yes, no, on, off, true and false unquoted as one)",
}


def key_type_shape(type_name):
    """The TYPE_SHAPES entry of a key whose type (Ansible's type_debug) is no string, else None."""
    name = str(type_name).lower().replace("ansibletagged", "").lstrip("_")
    return {"dict": "<mapping>", "list": "<list>", "tuple": "<list>", "int": "<number>", "float": "<number>",
            "bool": "<boolean>"}.get(name)


def _key_problem(shape):
    """Why a key of this shape (KEY_SHAPE_CLASSES, or a TYPE_SHAPES entry) cannot be used, or None."""
    if shape in TYPE_SHAPES:
        return TYPE_SHAPES[shape]
    if KEY_SHAPE_CLASSES["whitespace"] in shape:
        return "contains whitespace (a space, tab or newline, at the ends too)"
    if KEY_SHAPE_CLASSES["other"] in shape:
        return "contains characters other than A-Z a-z 0-9 . _ ~ + / = -"
    if len(shape) < KEY_MIN_LENGTH:
        return f"is {len(shape)} characters long, shorter than {KEY_MIN_LENGTH}"
    return None


def _expected(where):
    """The line an inventory writes for the key set at *where* (api_gateway_keys[chat], api_gateway_host_key)."""
    if where.startswith("api_gateway_keys["):
        return f'api_gateway_keys: {{{where[len("api_gateway_keys["):-1]}: "<key>"}}'
    return f'{where}: "<key>"'


def _key_fix(where, shape):
    """The fix of a refused key: its expected shape, and where that can be, the generated keys."""
    generated = "" if where == "api_gateway_metrics_key" else ", or remove it and set api_gateway_generate_keys: true"
    return (("write it as a quoted string: " if shape in TYPE_SHAPES else "use ")
            + f"a key of at least {KEY_MIN_LENGTH} of A-Z a-z 0-9 . _ ~ + / = - (openssl rand -hex 32), in Ansible "
            + f"Vault, as {_expected(where)}{generated}.")


def check_metrics_reused(host, reused):
    """api_gateway_metrics_key must be no inference key: the gateway takes it on every path then."""
    if not reused or not isinstance(reused, list):
        return []
    return [
        _bad(
            host,
            "api_gateway_metrics_key",
            f"api_gateway_metrics_key is the same key as {', '.join(map(str, reused))} (the keys are not shown).",
            "Prometheus sends the metrics key on every scrape, over plain HTTP unless the gateway has TLS; as an "
            "inference key it would open the models to whoever reads it.",
            "give api_gateway_metrics_key a key of its own (openssl rand -hex 32, in Ansible Vault).",
            rule="weak-api-key",
        )
    ]


def check_key_shapes(host, shapes, types=None):
    """Every configured API key (``where -> shape``): a string (*types*: where -> its type_debug), of token
    characters only, at least KEY_MIN_LENGTH.

    The message names where the key is set and what is wrong with it, never the key.
    """
    out = []
    types = types if isinstance(types, dict) else {}
    for where, text_shape in sorted((shapes or {}).items()) if isinstance(shapes, dict) else []:
        shape = key_type_shape(types.get(where)) or text_shape
        problem = _key_problem(shape) if isinstance(shape, str) else None
        if problem:
            out.append(
                _bad(
                    host,
                    where,
                    f"the key in {where} {problem} (the key is not shown).",
                    "clients send it as 'Authorization: Bearer <key>', which nginx and vLLM compare character "
                    "for character; whitespace never matches, and a short key can be guessed.",
                    _key_fix(where, shape),
                    rule="weak-api-key",
                )
            )
    return out


def check_gateway(host, gateway):
    """Every check of the api_gateway settings; *gateway* None: nothing to check (no gateway here)."""
    if gateway is None:
        return []
    return (
        check_body_size(host, gateway.get("client_max_body_size", "64m"))
        + check_listen_address(host, gateway.get("listen_address", ""))
        + check_metrics_allow(host, gateway.get("metrics_allow", []))
        + check_proxy_timeouts(host, gateway.get("proxy_timeouts"))
        + check_unauthorized_limit(
            host, gateway.get("unauthorized_rate", "30r/m"), gateway.get("unauthorized_burst", 20)
        )
        + check_key_shapes(host, gateway.get("key_shapes"), gateway.get("key_types"))
        + check_metrics_reused(host, gateway.get("metrics_reused"))
        + check_tls_pair(host, gateway)
        + check_plain_http(host, gateway)
    )


# --- the settings registry's checkers (settings_checks/api_gateway.yml): fn(value) -> None | (why, fix) -------
# A key is never quoted (the settings action scrubs a secret's value from the message too).
PEM_RE = re.compile(r"-----BEGIN (?P<label>[A-Z0-9 ]{1,40})-----\r?\n(?:[A-Za-z0-9+/=]{1,76}\r?\n)+"
                    r"-----END (?P=label)-----\r?\n?")
PRIVATE_KEY_LABELS = ("PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _key_text_problem(value, where):
    """(why, fix) when *value* (a key, never shown) is no usable key; None for a good one."""
    shape = key_type_shape(type(value).__name__) if not isinstance(value, str) else None
    if shape is None:
        text = str(value)
        shape = "".join("a" if re.fullmatch(r"[A-Za-z0-9._~+/=-]", c) else " " if c.isspace() else "?" for c in text)
    problem = _key_problem(shape)
    if problem:
        return f"the key (not shown) {problem}", _key_fix(where, shape).replace(where, "{var}").rstrip(".")
    return None


def setting_host_key(value):
    """api_gateway_host_key: "" (none) or a key (a string of 32+ token characters)."""
    return None if value == "" else _key_text_problem(value, "api_gateway_host_key")


def setting_metrics_key(value):
    """api_gateway_metrics_key: "" (none) or a key (a string of 32+ token characters)."""
    return None if value == "" else _key_text_problem(value, "api_gateway_metrics_key")


def setting_keys(value):
    """api_gateway_keys: a mapping of instance or service name -> key; each name plain, each key a string key."""
    if value is None:
        return ("is empty (null: nothing is written after the colon)",
                'write {var} as a mapping such as {chat: "<key>"} (in Ansible Vault), or {} for none')
    if not isinstance(value, dict):
        return ("is not a mapping of instance name -> key (not shown)",
                'write {var} as a mapping such as {chat: "<key>"}, one entry per instance or service')
    for name, key in value.items():
        if not (isinstance(name, str) and NAME_RE.fullmatch(name)):
            return (f"the entry {str(name)[:64]!r} is not an instance or service name (letters, digits, . _ -)",
                    "name each entry of {var} after an instance (its name) or a service (its served_model_name)")
        problem = None if key in (None, "") else _key_text_problem(key, f"api_gateway_keys[{name}]")
        if problem:
            return f"entry {name}: {problem[0]}", problem[1]
    return None


def setting_listen_address(value):
    """api_gateway_listen_address: "" or one IP address without a zone index (listen_problem)."""
    problem = listen_problem(value)
    return (f"{problem[0]}; {LISTEN_WHY[:-1]}", problem[1].replace("write", "set {var} to", 1)) if problem else None


def _pem(value, labels, what, secret):
    fix = f"set {{var}} to the PEM text of the {what} (-----BEGIN ...----- to -----END ...-----), or \"\" for none"
    if value == "":
        return None
    if not isinstance(value, str) and type(value).__name__ != "EncryptedString":
        return f"is {'a ' + type(value).__name__}, not PEM text", fix
    blocks = list(PEM_RE.finditer(str(value).strip() + "\n"))
    whole = "".join(m.group(0) for m in blocks)
    if not blocks or whole.replace("\r", "").strip() != str(value).replace("\r", "").strip() \
            or any(m.group("label") not in labels for m in blocks):
        shown = "" if secret else f" {str(value)[:40]!r}..."
        return (f"is not PEM text of a {what}{shown} (only BEGIN/END lines around base64 lines), so nginx would "
                "refuse it or read something else"), fix
    return None


def setting_tls_certificate(value):
    """api_gateway_tls_certificate (and the CA of prometheus_gateway_ca_certificate): "" or PEM certificates."""
    return _pem(value, ("CERTIFICATE",), "certificate (chain)", secret=False)


def setting_tls_private_key(value):
    """api_gateway_tls_private_key: "" or one PEM private key (never shown)."""
    return _pem(value, PRIVATE_KEY_LABELS, "private key", secret=True)
