# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall's decisions (roles/firewall), on the controller.

Pure Python, no Ansible imports. Served by the filters of plugins/filter/firewall_plan.py:

- ``exporter_ports``: the exporters' ports, from the serving plan's ``shared.exporters`` (the one home of
  the exporters' settings), opened to firewall_metrics_cidrs only while they listen off loopback;
- ``ports``: every port list the rulesets open or close, from the serving plan and the role's settings;
- ``port_check``: the refusals of the plan phase (an engine port opened elsewhere, Ray's entry) and the
  line that reports what the firewall allows;
- ``needs_load``, ``apply_files`` and ``rollback_outcome``: the configure phase's decisions.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._firewall_ray import ray_problems

# Listen addresses that keep the exporters on the host itself (besides 127.0.0.0/8).
LOOPBACK_NAMES = ("::1", "[::1]", "localhost")
# The exporters' own defaults (roles/exporters), for an entry that lacks a port.
NODE_EXPORTER_PORT = 9100
EXPORTER_PORT = 9402

OVERLAP_MESSAGE = (
    "{host}: port(s) {ports} are engine (backend) ports of the serving plan and also in firewall_extra_tcp_ports, "
    "firewall_metrics_tcp_ports or firewall_ssh_port. Why: an engine listens on loopback without the gateway's key "
    "check and must never be reachable from outside. Fix: remove them from those variables, or change the "
    "instance's backend_port. Nothing was changed."
)


def _ints(values):
    """Sorted, each once, as integers (Jinja's ``map('int') | unique | sort``)."""
    return sorted({int(value) for value in values or []})


def _joined(values):
    return ", ".join(str(value) for value in values)


def _nets(nets):
    """The addresses of a volta.serving.cidr_split answer, IPv4 first."""
    nets = nets or {}
    return list(nets.get("ipv4") or []) + list(nets.get("ipv6") or [])


def exporter_ports(exporters):
    """[node_exporter port, volta-exporter port] while the exporters listen off loopback, else [].

    *exporters* is the plan's ``shared.exporters`` ({listen_address, port, node_exporter_port, ...}); none
    (no serving plan for the host) opens nothing.
    """
    if not exporters:
        return []
    address = str(exporters.get("listen_address") or "127.0.0.1")
    if address in LOOPBACK_NAMES or address.startswith("127."):
        return []
    return [int(exporters.get("node_exporter_port") or NODE_EXPORTER_PORT), int(exporters.get("port") or EXPORTER_PORT)]


def ports(serving_plan, host, volta_hosts, ssh_port, extra=(), metrics=(), exporter=None):
    """The port lists of the rulesets, from the serving plan's result and the role's settings.

    *serving_plan* is what the serving_plan action returned (skipped, or empty: a host with no plan);
    *exporter* the exporters' ports as the inventory sets them (firewall_exporter_tcp_ports), none for the
    plan's. The router's service ports are opened only on a host of group volta (*volta_hosts*).
    """
    plan = (serving_plan or {}).get("plan") or {"gateway_ports": [], "instances": []}
    in_volta = host in (volta_hosts or [])
    services = plan.get("services") or [] if in_volta else []
    # An instance this host heads over several hosts: the router routes it by its head, on its own port.
    headed = [inst["public_port"] for inst in plan.get("instances") or [] if inst.get("cluster")] if in_volta else []
    if exporter is None:
        exporter = exporter_ports((plan.get("shared") or {}).get("exporters"))
    # A fleet router on this host (the plan's shared.router_ports) serves the same clients as the gateway.
    router_own = (plan.get("shared") or {}).get("router_ports") or []
    return {
        "gateway": _ints(list(plan.get("gateway_ports") or []) + list(router_own)),
        # Every planned instance's backend port, enabled or not: none is ever reachable from outside.
        "engine": _ints(instance["backend_port"] for instance in plan.get("instances") or []),
        "extra": _ints(extra),
        # The service ports of a host of group volta and the ports of the instances it heads: the fleet router's.
        "router": _ints([service["port"] for service in services] + headed),
        "metrics": _ints(list(metrics or []) + list(exporter)),
        "ssh": int(ssh_port),
        "ray": plan.get("ray"),
    }


def port_check(ports_, host, backend, ssh_port, nets):
    """{problems, report}: the plan phase's refusals (the first fails the host) and its report line.

    *nets* holds the cidr_split answers of ``ssh``, ``api`` and ``router``; *ssh_port* is
    firewall_ssh_port as written (the report shows it so).
    """
    opened = ports_["extra"] + ports_["metrics"] + [ports_["ssh"]]
    overlap = [port for port in ports_["engine"] if port in opened]
    problems = [OVERLAP_MESSAGE.format(host=host, ports=_joined(overlap))] if overlap else []
    ray = ports_.get("ray")
    if ray is not None:
        problems += ray_problems(dict(ray), host, open_ports=ports_["gateway"] + ports_["router"] + opened)
    router_nets = _nets(nets.get("router"))
    report = (
        f"{host}: default deny inbound ({backend}); SSH port {ssh_port} from {_joined(_nets(nets.get('ssh')))};"
        f" gateway ports {_joined(ports_['gateway']) or 'none'} and extra ports {_joined(ports_['extra']) or 'none'}"
        f" from {_joined(_nets(nets.get('api'))) or 'nowhere'};"
        f" engine ports {_joined(ports_['engine']) or 'none'} from loopback only"
    )
    if ports_["router"] and router_nets:
        report += f"; service ports {_joined(ports_['router'])} also from the fleet router ({_joined(router_nets)})"
    if ray:
        report += (f"; Ray ports {_joined(ray.get('tcp_ports') or [])} from cluster members"
                   f" {_joined(ray.get('peers') or [])} on {ray.get('interface')}")
    # The overlap is reported alone (it is the first refusal); else Ray's, all of them.
    message = problems[0] if overlap else " ".join(problems)
    return {"problems": problems, "message": message, "report": report}


def needs_load(state, backend, conf):
    """Whether the rules must be loaded: the ruleset file (nftables) or the rule script (ufw, the template
    task's result *conf*) changed, or the live rules are missing (*state*: volta.serving.firewall_state)."""
    if backend == "nftables":
        changed = len(state.get("ruleset_changes") or []) > 0
    else:
        changed = bool((conf or {}).get("changed"))
    return changed or not state.get("live_present")


def apply_files(backend, staged, content, rollback_pending, rollback_script):
    """The files of the load's one write (volta.serving.files): the staged nftables ruleset (checked with
    nft -c) and the rollback script, unless an interrupted run's rollback is pending (its script restores
    the rules last confirmed)."""
    files = []
    if backend == "nftables":
        files.append({"path": staged, "content": content, "mode": "0600", "validate": "nft -c -f %s"})
    if not rollback_pending:
        files.append({"path": rollback_script, "mode": "0700", "template": f"rollback-{backend}.sh.j2"})
    return files


def rollback_outcome(facts):
    """What a failed load left behind, for the failure message.

    *facts*: armed (the rollback timer was armed: rules were loaded), restored (the previous file was put
    back), rolled_back (the rollback script ran), backend, dest (the rendered file), ufw_script, nft_conf,
    timeout (firewall_rollback_timeout), unit (the rollback unit).
    """
    ufw = facts["backend"] == "ufw"
    if not facts["armed"]:
        back = f"; {facts['dest']} was put back" if facts["restored"] else ""
        return f"Nothing was loaded{back}."
    if facts["rolled_back"]:
        if ufw:
            return f"The previous rules and {facts['ufw_script']} were restored."
        return (f"The previous rules were restored; {facts['nft_conf']} was not changed"
                " (it is written after a confirmed load).")
    script = f" and {facts['ufw_script']}" if ufw else ""
    conf = "" if ufw else f"; {facts['nft_conf']} was not changed"
    return (f"The controller could not reach the host to restore it: the host restores the previous rules{script}"
            f" by itself within {facts['timeout']} s of the load (transient timer {facts['unit']}.timer){conf}.")
