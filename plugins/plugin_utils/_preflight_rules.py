# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks preflight makes on the controller from the host's variables, before any host is changed.

Pure Python, no Ansible imports. Each function checks one kind of setting and returns findings
(``_rules.finding``): unknown variables (``_known_vars``), the driver version against its branch, the
engine versions (their form, and the index's releases when the controller could read them), the form of
the sha256 and commit pins, and an API no network may reach. ``preflight_findings`` runs them all from
the ``preflight`` mapping the action plugin volta.serving.serving_plan builds (keys: see its docstring).
"""

from __future__ import annotations

import re

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding
from ansible_collections.volta.serving.plugins.plugin_utils._known_vars import unknown_variables
from ansible_collections.volta.serving.plugins.plugin_utils._model_rules import hf_endpoint

# The rules only preflight runs (id: (severity, overridable, what it is about); the registry, _rules.RULES,
# assembles every layer's).
CATALOGUE = {
    "unknown-variable": (ERROR, False, "a variable with a role's prefix that no role reads (a typo?)"),
    "driver-version-branch": (ERROR, False, "nvidia_driver_version not a version of nvidia_driver_branch"),
    "engine-version": (ERROR, False, "an engine version that is not a release (format, or not on the index)"),
    "engine-index-unread": (WARNING, False, "the engine index could not be read to check the pinned versions"),
    "pin-format": (ERROR, False, "a sha256 or commit pin of the wrong form, or an obvious placeholder"),
    "api-cidrs-empty": (ERROR, False, "instances with the firewall on and no network allowed to reach the API"),
}

SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")
COMMIT_RE = re.compile(r"[0-9a-f]{40}")
# A PEP 440 public version: release segment, optional pre-, post- and dev-release (no local label).
RELEASE_RE = re.compile(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?")
# The engine variables whose versions are checked, by flavour (the engine role's pins).
ENGINE_VERSION_VARS = {flavour: {key: f"engine_{flavour}_{key}" for key in ("version", "torch_version")}
                       for flavour in ("vllm", "onecat")}
# The engine variable whose releases are read from engine_pypi_index_url, and its project there.
INDEXED = {"engine_vllm_version": "vllm"}
# The longest period of a repeated pattern that marks a pin as a placeholder (deadbeef x 8).
FAKE_PERIOD = 8


def placeholder(value):
    """True when *value* is one short pattern repeated (aaaa..., 1111..., deadbeef...): not a real digest."""
    text = str(value).lower()
    return len(text) >= 2 * FAKE_PERIOD and any(
        text == text[:period] * (len(text) // period) for period in range(1, FAKE_PERIOD + 1)
        if len(text) % period == 0)


def driver_version(host, version, branch):
    """nvidia_driver_version must be "" or a version of nvidia_driver_branch (580.95.05, 580.95.05-0ubuntu1)."""
    version, branch = str(version or ""), str(branch or "")
    if not version or not branch or re.fullmatch(re.escape(branch) + r"\.\d+(\.\d+)?(-\S+)?", version):
        return []
    return [finding(
        "driver-version-branch", host, None, "nvidia_driver_version",
        f"nvidia_driver_version {version} is not a version of driver branch {branch} (nvidia_driver_branch).",
        f"the driver role installs that version from the {branch} branch's packages, where it does not exist; "
        "the host layer would refuse it only after other hosts were changed.",
        f'set nvidia_driver_version to "" (the newest of branch {branch}) or to a {branch}.x version such as '
        f"{branch}.95.05 (apt-cache madison nvidia-driver-{branch}-server lists them).",
    )]


def _version_form(host, variable, value):
    if RELEASE_RE.fullmatch(str(value)):
        return []
    return [finding(
        "engine-version", host, None, variable,
        f"{variable} {value!r} is not a release version (PEP 440, such as 0.21.0).",
        "the engine is installed at exactly this version and its torch pin is read from that release's "
        "metadata; a word such as latest or a range would install whatever the index serves on the day.",
        f"pin a release, such as {variable}: \"0.21.0\" (the engine role's default lists the verified pins).",
    )]


def _newest(versions, count=3):
    def key(text):
        return tuple(int(p) for p in re.findall(r"\d+", text)[:4])
    return sorted((v for v in versions if RELEASE_RE.fullmatch(v)), key=key)[-count:]


def _version_on_index(host, variable, value, read):
    """*read*: {project, index, versions (None when unread), error}."""
    project, index = read.get("project"), read.get("index")
    if read.get("versions") is None:
        return [finding(
            "engine-index-unread", host, None, variable,
            f"the releases of {project} on {index} could not be read from the controller "
            f"({read.get('error') or 'no answer'}); {variable} {value} was checked for its form only.",
            "preflight compares the pinned version with the index's releases when it can reach the index.",
            f"nothing if the hosts reach {index}; else check engine_pypi_index_url (the engine layer fails on a "
            "version the index does not have).",
        )]
    if str(value) in read["versions"]:
        return []
    newest = ", ".join(_newest(read["versions"])) or "none"
    return [finding(
        "engine-version", host, None, variable,
        f"{variable} {value} is not a release of {project} on {index} (newest there: {newest}).",
        "the engine layer would fail to install it, after the driver and the CUDA toolkit were installed.",
        f"pin one of the index's releases of {project} (pip index versions {project} --index-url {index}).",
    )]


def engine_versions(host, pins, releases):
    """*pins*: engine version variable -> value (the flavours the host uses); *releases*: variable -> read."""
    out = []
    for variable, value in sorted(pins.items()):
        form = _version_form(host, variable, value)
        out += form
        if not form and variable in releases:
            out += _version_on_index(host, variable, value, releases[variable])
    return out


def _pin_finding(host, field, value, what, fix):
    shown = f"{str(value)[:12]}..." if len(str(value)) > 12 else str(value)
    return finding(
        "pin-format", host, None, field,
        f"{field} {shown!r} is not {what}.",
        "a pin is what makes a rerun install exactly what was verified; a placeholder or a value of the "
        "wrong form fails the download's check late, or pins nothing.",
        fix,
    )


def sha256_pins(host, pins):
    """Every non-empty *_sha256 setting: 64 hex digits, and not a placeholder."""
    out = []
    for name, value in sorted(pins.items()):
        if value in (None, ""):
            continue
        if not SHA256_RE.fullmatch(str(value)) or placeholder(value):
            out.append(_pin_finding(host, name, value, "a sha256 (64 hex digits, not a placeholder)",
                                    f"set {name} to the file's real sha256 (sha256sum FILE, or the release's "
                                    "published checksum), or \"\" where the setting allows it."))
    return out


def model_pins(host, models):
    """volta_models: each hf revision a 40-hex commit and each url sha256 64 hex, neither a placeholder."""
    out = []
    for name, given in sorted((models or {}).items()) if isinstance(models, dict) else []:
        source = given if isinstance(given, dict) else {}
        hf = source.get("hf") if isinstance(source.get("hf"), dict) else {}
        revision = hf.get("revision")
        if isinstance(revision, str) and COMMIT_RE.fullmatch(revision) and placeholder(revision):
            out.append(_pin_finding(host, f"volta_models.{name}.hf.revision", revision,
                                    "a commit id (40 hex digits, not a placeholder)",
                                    f"pin the commit the hub lists for {hf.get('repo')} under 'Files and "
                                    "versions' (git ls-remote https://huggingface.co/REPO)."))
        digest = source.get("sha256")
        if isinstance(digest, str) and digest and placeholder(digest):
            out.append(_pin_finding(host, f"volta_models.{name}.sha256", digest,
                                    "a sha256 (64 hex digits, not a placeholder)",
                                    "set it to the file's real sha256 (sha256sum FILE)."))
    return out


def api_cidrs(host, instances, gateway):
    """With the firewall on, instances to serve and no firewall_api_cidrs, the API is reachable by no one."""
    gateway = gateway or {}
    served = [i.get("name") for i in instances or [] if isinstance(i, dict) and i.get("enabled", True) is not False]
    if not served or not gateway.get("firewall_enabled", True) or gateway.get("api_cidrs"):
        return []
    names = ", ".join(str(n) for n in served)
    return [finding(
        "api-cidrs-empty", host, None, "firewall_api_cidrs",
        f"firewall_api_cidrs is empty while the host serves {len(served)} instance(s) ({names}).",
        "the firewall opens the gateway's ports to these networks only; with none the API is reachable by no "
        "one, and the end-of-run check, which calls the gateway from the host itself, still passes.",
        "set firewall_api_cidrs to the clients' networks, such as [10.0.0.0/8] (a misspelt firewall_api_cidr "
        "is not read), or firewall_enabled: false where another firewall guards the host.",
    )]


def preflight_findings(host, preflight, instances, gateway):
    """Every controller-side check of *preflight* (built by the action plugin) for one host.

    Keys: ``variables`` (the host's variable names), ``driver_version``, ``driver_branch``,
    ``engine_pins`` (variable -> version), ``releases`` (variable -> {project, index, versions, error}),
    ``sha256`` (variable -> value), ``models`` (volta_models), ``hf_endpoint`` (model_hf_endpoint), ``lab``
    (volta_lab).
    """
    return (unknown_variables(host, preflight.get("variables") or ())
            + driver_version(host, preflight.get("driver_version"), preflight.get("driver_branch"))
            + engine_versions(host, preflight.get("engine_pins") or {}, preflight.get("releases") or {})
            + sha256_pins(host, preflight.get("sha256") or {})
            + model_pins(host, preflight.get("models"))
            + hf_endpoint(host, preflight.get("models"), preflight.get("hf_endpoint"), bool(preflight.get("lab")))
            + api_cidrs(host, instances, gateway))
