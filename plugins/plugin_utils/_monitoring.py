# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Prometheus scrapes on the serving hosts, computed from the inventory.

Pure Python, no Ansible imports, so unit tests import it directly. Private to the collection.
``scrape_targets(hosts, hostvars)`` returns the node_exporter, volta-exporter and engine targets of
the hosts of group volta, and every problem that keeps one of them from being scraped from
another host (each names the host, the variable and the fix). The prometheus role's
``volta.serving.prometheus_targets`` filter calls it; the role fails on any problem.

Also the one home of the metric contract shared with the exporter (JOBS, CONTRACT_METRICS), and the settings
registry's checkers of the monitoring settings that reach a daemon's command line, a unit or a file name
(``check_*``: ``fn(value) -> None | (why, fix)``, named ``_monitoring:check_...`` in
settings_checks/exporters.yml and settings_checks/prometheus.yml; ``{var}`` in a fix is the variable's name).
"""

from __future__ import annotations

import ipaddress
import posixpath
import re

from ansible_collections.volta.serving.plugins.plugin_utils._cluster import read_cluster
from ansible_collections.volta.serving.plugins.plugin_utils._defaults import literal
from ansible_collections.volta.serving.plugins.plugin_utils._settings_kinds import (
    check_abs_path,
    check_account,
    show,
)

# Scrape job names the alert rules and the dashboard use.
JOBS = {"node": "volta-node", "gpu": "volta-gpu", "engine": "volta-engine"}
# volta-exporter's metrics (the contract with roles/exporters; docs/monitoring.md).
CONTRACT_METRICS = frozenset((
    "volta_gpu_exporter_nvml_up", "volta_gpu_count", "volta_gpu_expected_count", "volta_gpu_pci_devices",
    "volta_gpu_info", "volta_gpu_utilization_ratio", "volta_gpu_memory_used_bytes",
    "volta_gpu_memory_total_bytes", "volta_gpu_temperature_celsius", "volta_gpu_power_watts",
    "volta_gpu_power_limit_watts", "volta_gpu_clock_hertz", "volta_gpu_throttle_active", "volta_gpu_ecc_errors",
    "volta_gpu_retired_pages", "volta_gpu_retired_pages_pending", "volta_gpu_xid_errors_total",
    "volta_gpu_nvlink_errors", "volta_gpu_pcie_link_generation", "volta_gpu_pcie_link_width",
    "volta_gateway_responses_total",
))
# The exporters' settings a scrape target needs; a host that does not set one has the exporters role's default
# (roles/exporters/defaults/main.yml, their one home: loopback, so nothing is exposed until asked).
EXPORTER_SETTINGS = ("exporters_listen_address", "exporters_port", "exporters_node_exporter_port",
                     "exporters_node_exporter_enabled")


def _problem(host, variable, text, fix):
    return {"host": host, "variable": variable, "message": f"{host}: {variable}: {text} Fix: {fix}"}


def _is_loopback(address):
    try:
        return ipaddress.ip_address(str(address)).is_loopback
    except ValueError:
        return str(address) == "localhost"


def _wildcard(address):
    return str(address) in ("", "0.0.0.0", "::")  # noqa: S104 - reads a listen address, binds nothing


def _hostport(address, port):
    return f"[{address}]:{port}" if ":" in str(address) else f"{address}:{port}"


def _address(host, hv):
    """The host's address as the monitoring host reaches it: prometheus_scrape_address, ansible_host, name."""
    return str(hv.get("prometheus_scrape_address") or hv.get("ansible_host") or host)


def _setting(hv, name):
    return hv[name] if name in hv else literal("exporters", name)


def _firewall_problems(host, hv, ports):
    """The firewall role (on unless firewall_enabled: false) lets scrapers in from firewall_metrics_cidrs only."""
    if hv.get("firewall_enabled", True) is False or hv.get("firewall_metrics_cidrs"):
        return []
    return [_problem(host, "firewall_metrics_cidrs",
                     f"is empty: the firewall of {host} drops the scrapes of ports {', '.join(map(str, ports))}.",
                     f"add the monitoring host's address (or its network) to firewall_metrics_cidrs of {host}.")]


def exporter_targets(host, hv):
    """``(targets, problems)``: the host's node_exporter and volta-exporter targets."""
    listen, port = _setting(hv, "exporters_listen_address"), _setting(hv, "exporters_port")
    node = _setting(hv, "exporters_node_exporter_port") if _setting(hv, "exporters_node_exporter_enabled") else None
    ports = [p for p in (port, node) if p is not None]
    if _is_loopback(listen):
        return [], [_problem(
            host, "exporters_listen_address",
            f"the exporters listen on {listen} (loopback{', the default' if listen == '127.0.0.1' else ''}): "
            "Prometheus on another host cannot scrape them.",
            f"set exporters_listen_address in host_vars/{host}.yml to an address of {host} that the monitoring "
            f"host reaches (for example {_address(host, hv)}), and the monitoring host's address in "
            f"firewall_metrics_cidrs (ports {', '.join(map(str, ports))}).")]
    address = _address(host, hv) if _wildcard(listen) else str(listen)
    targets = [{"job": JOBS["gpu"], "host": host, "target": _hostport(address, port)}]
    if node is not None:
        targets.insert(0, {"job": JOBS["node"], "host": host, "target": _hostport(address, node)})
    return targets, _firewall_problems(host, hv, ports)


def _served_here(host, inst):
    """An enabled instance whose gateway port is on this host (a cluster's head only)."""
    if not isinstance(inst, dict) or inst.get("enabled", True) is False or not inst.get("name"):
        return False
    if inst.get("cluster") is None:
        return True
    cluster, _problem_text = read_cluster(inst["cluster"])
    return bool(cluster) and cluster["head"] == host


def _metrics_key(hv):
    """The host's metrics-only key (api_gateway_metrics_key): the gateway takes it on /metrics only, so no
    inference key is ever sent on a scrape (plain HTTP unless the gateway has TLS)."""
    key = hv.get("api_gateway_metrics_key")
    return key if isinstance(key, str) or type(key).__name__ == "EncryptedString" else ""


def _gateway_problems(host, hv, listen):
    if _is_loopback(listen):
        return [_problem(host, "api_gateway_listen_address",
                         f"the gateway listens on {listen} only: Prometheus on another host cannot reach it.",
                         f'set api_gateway_listen_address for {host} to "" (every address) or an address the '
                         "monitoring host reaches.")]
    if not hv.get("api_gateway_metrics_allow"):
        return [_problem(host, "api_gateway_metrics_allow",
                         "is empty: the gateway answers /metrics with 403 to everyone.",
                         f"add the monitoring host's address (or its network) to api_gateway_metrics_allow of {host}.")]
    return []


def engine_targets(host, hv):
    """``(targets, problems)``: one target per enabled instance, its /metrics through the host's gateway."""
    instances = [i for i in hv.get("volta_instances") or [] if _served_here(host, i)]
    if not instances:
        return [], []
    listen = hv.get("api_gateway_listen_address", "")
    problems = _gateway_problems(host, hv, listen)
    if problems:
        return [], problems
    address = _address(host, hv) if _wildcard(listen) else str(listen)
    scheme = "https" if hv.get("api_gateway_tls_certificate") else "http"
    key = str(_metrics_key(hv))
    if not key:
        return [], [_problem(
            host, "api_gateway_metrics_key",
            f"is not set: Prometheus scrapes the gateway of {host} with its metrics-only key, never with an "
            f"inference key (instance(s) {', '.join(i['name'] for i in instances)}).",
            f"set api_gateway_metrics_key for {host} (Ansible Vault, openssl rand -hex 32, no inference key): the "
            "gateway takes it on /metrics only.")]
    targets = [{"job": JOBS["engine"], "host": host, "instance_name": inst["name"], "scheme": scheme,
                "target": _hostport(address, inst.get("port")), "key": key} for inst in instances]
    return targets, problems


def scrape_targets(hosts, hostvars):
    """``{"exporters": [...], "engines": [...], "problems": [...]}`` for *hosts* (inventory order)."""
    out = {"exporters": [], "engines": [], "problems": []}
    for host in hosts:
        hv = hostvars[host]
        for kind, compute in (("exporters", exporter_targets), ("engines", engine_targets)):
            targets, problems = compute(host, hv)
            out[kind] += targets
            out["problems"] += problems
    return out


def key_file(key_dir, target):
    """The file the monitoring host keeps an engine target's key in (0600, read by Prometheus)."""
    return f"{key_dir}/{target['host']}-{target['instance_name']}.key"


def _static(target, **labels):
    return [{"targets": [target["target"]], "labels": {"host": target["host"], **labels}}]


def scrape_configs(targets, key_dir, ca_file="", self_target="localhost:9090"):
    """prometheus.yml's scrape_configs for *targets* (``scrape_targets()``), keys as credentials files.

    Prometheus wants one job_name per scrape configuration and each engine has its own key, so each
    engine gets its own configuration, named after host and instance, and its job label is set to
    volta-engine by relabelling (the label the alert rules and the dashboard use).
    """
    configs = [{"job_name": "prometheus", "static_configs": [{"targets": [self_target]}]}]
    for kind in ("node", "gpu"):
        configs.append({"job_name": JOBS[kind], "static_configs": [
            s for t in targets["exporters"] if t["job"] == JOBS[kind] for s in _static(t)]})
    for target in targets["engines"]:
        config = {
            "job_name": f"{JOBS['engine']}-{target['host']}-{target['instance_name']}",
            "scheme": target["scheme"],
            "metrics_path": "/metrics",
            "authorization": {"type": "Bearer", "credentials_file": key_file(key_dir, target)},
            "static_configs": _static(target, instance_name=target["instance_name"]),
            "relabel_configs": [{"target_label": "job", "replacement": JOBS["engine"]}],
        }
        if target["scheme"] == "https" and ca_file:
            config["tls_config"] = {"ca_file": ca_file}
        configs.append(config)
    return configs


# --- the settings registry's checkers ------------------------------------------------------------------------
# A Prometheus duration (prometheus/common model.ParseDuration), units largest first, at least one; "0" is
# refused too: with no size limit, Prometheus reads it as its own 15d default.
DURATION_RE = re.compile(r"(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?")
# A Prometheus size (--storage.tsdb.retention.size): a whole number and a unit.
SIZE_RE = re.compile(r"[1-9][0-9]*(?:B|KB|MB|GB|TB|PB|EB)")
# Directories whose every file a log reader must not be given: a default ACL there reaches every new file.
WIDE_DIRS = frozenset(("/", "/var", "/var/log", "/etc", "/root", "/home", "/usr", "/opt", "/srv", "/run", "/proc",
                       "/sys", "/dev", "/boot", "/var/lib", "/" + "tmp"))
GLOB_CHARS = frozenset("*?[]")
# Accounts a service account of its own must never be: the role sets its group, home and shell.
SYSTEM_ACCOUNTS = frozenset(("root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
                             "proxy", "www-data", "backup", "list", "irc", "gnats", "nobody", "sshd", "_apt",
                             "messagebus", "syslog", "prometheus", "ubuntu", "debian", "admin"))


def _text(value, what, fix):
    if not isinstance(value, str) or not value:
        return f"{show(value)} is not {what}", fix
    bad = sorted({c for c in value if c.isspace() or not c.isprintable() or c in ";{}#\"'`$\\"})
    if bad or value.startswith("-"):
        holds = f"contains {' '.join(map(repr, bad))}" if bad else "starts with -"
        return (f"{show(value)} is not {what}: it {holds}, so the daemon would read the rest of it as flags of its own "
                "command line"), fix
    return None


def check_retention_time(value):
    """prometheus_retention_time: a Prometheus duration (30d, 12w, 1y, 36h), written into ARGS of the unit."""
    fix = "set {var} to a duration such as 30d, 12w or 1y (units y w d h m s ms, largest first, no spaces)"
    problem = _text(value, "a Prometheus duration", fix)
    if problem:
        return problem
    if not DURATION_RE.fullmatch(value) or value in ("", "0") or set(value) <= {"0"}:
        return (f"{show(value)} is not a Prometheus duration (a number and a unit, such as 30d), so Prometheus "
                "would not start or would keep its own default"), fix
    return None


def check_retention_size(value):
    """prometheus_retention_size: "" (no limit) or a size with a unit (50GB), written into ARGS of the unit."""
    if value == "":
        return None
    fix = 'set {var} to a size such as 50GB (units B KB MB GB TB PB EB), or to "" for no limit'
    problem = _text(value, "a Prometheus size", fix)
    if problem:
        return problem
    if not SIZE_RE.fullmatch(value):
        return f"{show(value)} is not a Prometheus size (a whole number and a unit, such as 50GB)", fix
    return None


def check_expected_gpus(value):
    """exporters_expected_gpus: "" or a count of GPUs (the unit's --expected-gpus and its DeviceAllow lines)."""
    fix = 'set {var} to the number of GPUs, such as 8, or to "" to leave the series out'
    if isinstance(value, bool):
        return f"{show(value)} is a boolean, not a count of GPUs", fix
    text = str(value) if isinstance(value, int) else value
    if isinstance(text, str) and (text == "" or (text.isascii() and text.isdigit() and int(text) <= 64)):
        return None
    return f"{show(value)} is not a count of GPUs (0 to 64) or empty", fix


def check_exporters_root(value):
    """exporters_root: a directory of its own (the role makes it root:root 0755 and puts a venv into it)."""
    problem = check_abs_path(value)
    if problem:
        return problem
    if posixpath.normpath(value) in WIDE_DIRS or posixpath.normpath(value).startswith("/usr/"):
        return (f"{show(value)} is a system directory: the role would take it over (owner root, mode 0755) and "
                "the exporter's account would get it as its home",
                "set {var} to a directory of its own, such as /opt/volta-exporter")
    return None


def check_exporters_user(value):
    """exporters_user: an account of the exporter's own (the role sets its group, home and shell: nologin)."""
    problem = check_account(value)
    if problem:
        return problem
    if value in SYSTEM_ACCOUNTS or value.startswith("systemd-"):
        return (f"{show(value)} is an account of the system or of another service: the role would change its "
                "group, home and shell (nologin) and grant it the gateway's logs",
                "set {var} to an account of its own, such as volta-exporter")
    return None


def check_gateway_logs(value):
    """exporters_gateway_logs: "" or a glob of files in one directory, which the exporter's account may read.

    The role grants read access (ACL) to that directory and, by its default ACL, to every file made in it: the
    directory must be the gateway's own (/var/log/nginx), never a log root such as /var/log.
    """
    if value == "":
        return None
    fix = 'set {var} to a glob of the gateway\'s access logs, such as /var/log/nginx/volta-*.access.log, or "" for none'
    problem = check_abs_path(value)
    if problem:
        return problem[0], fix
    directory = posixpath.dirname(posixpath.normpath(value))
    if value.endswith("/") or GLOB_CHARS & set(directory):
        return f"{show(value)} is not a glob of files in one directory (a glob in the directory part)", fix
    if directory in WIDE_DIRS:
        return (f"{show(value)} is in {directory}: the exporter's account would be granted every file made there "
                "(a default ACL), auth.log included"), fix
    return None
