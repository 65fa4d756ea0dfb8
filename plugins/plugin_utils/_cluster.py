# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Instances larger than one server: one vLLM instance over a Ray cluster of several hosts.

An instance with a ``cluster`` field is declared alike on every member (a group's variables):

    cluster:
      members: [server-a, server-c]   # inventory hostnames; the first is Ray's head
      interface: ens1f0               # the cluster network's interface, on every member

Every member runs Ray from its own engine install (unit ``volta-ray.service``, the engine's account);
only the head runs ``vllm serve`` (``--distributed-executor-backend ray``), behind its gateway. Tensor
parallel stays inside a host, pipeline parallel goes across hosts: tensor_parallel x
pipeline_parallel = GPUs per member x members.

What each host's plan reads about the other members (``members``: inventory hostname -> what the
serving_plan action read from that host's variables and facts):

    known       the host is in the inventory
    in_play     it is in this run (a cluster changes on every member at once, never on one)
    instances   its instances that the host's cluster instances name: name -> raw (model_source resolved)
    server      its volta_server (gpu_model, compute_capability)
    engine      its engine pins {flavour: {version, torch_version, torch_cuda}}
    interfaces  interface -> IPv4 address from its gathered facts (None: facts not read)
    clusters    the names of the cluster instances it declares
"""

from __future__ import annotations

import json
import re

from ansible_collections.volta.serving.plugins.plugin_utils._findings import ERROR, WARNING, finding

CLUSTER_KEYS = ("members", "interface")
# An interface name as Linux allows it (IFNAMSIZ 16 with the NUL) and nft/ufw accept it unquoted.
_IFACE_RE = re.compile(r"[A-Za-z0-9_.:-]{1,15}")
_HOST_RE = re.compile(r"[A-Za-z0-9_.-]{1,253}")
RAY_ENGINES = ("vllm", "onecat")
RAY_UNIT = "volta-ray.service"
# The fields every member's instance must have alike: the head starts one vLLM over all of them, and each
# member's Ray workers load their pipeline stage from their own install and their own copy of the model.
SAME_FIELDS = ("engine", "model", "served_model_name", "gpus", "tensor_parallel", "pipeline_parallel",
               "max_model_len", "dtype", "kv_cache_dtype", "quantization", "model_family", "extra_args")
# Ray's ports, by the ray start option that sets each (one home: engine_service_ray_ports).
PORT_FLAGS = {
    "gcs": "--port",
    "node_manager": "--node-manager-port",
    "object_manager": "--object-manager-port",
    "runtime_env_agent": "--runtime-env-agent-port",
    "dashboard_agent_grpc": "--dashboard-agent-grpc-port",
    "dashboard_agent_listen": "--dashboard-agent-listen-port",
    "metrics_export": "--metrics-export-port",
    "worker_min": "--min-worker-port",
    "worker_max": "--max-worker-port",
}
# No Ray Client server: it needs ray[client] (`ray start` refuses --ray-client-server-port without it), and
# nothing here connects through it.
HEAD_ONLY_PORTS = ("gcs",)
# The rules of this module (id: (severity, overridable, what it is about); the registry, _rules.RULES,
# assembles every layer's).
CATALOGUE = {
    "cluster-invalid": (ERROR, False, "a cluster field that is not {members: [2+ hosts], interface: name}"),
    "cluster-not-member": (ERROR, False, "a host that declares a cluster instance but is not one of its members"),
    "cluster-member-unknown": (ERROR, False, "a cluster member not in the inventory or not in this run"),
    "cluster-member-mismatch": (ERROR, False, "a cluster member without the instance, or with other settings"),
    "cluster-gpu-mismatch": (ERROR, False, "cluster members with different GPU models"),
    "cluster-engine-mismatch": (ERROR, False, "cluster members with different engine pins"),
    "cluster-interface": (ERROR, False, "a cluster member without an IPv4 address on the cluster interface"),
    "cluster-engine": (ERROR, False, "a multi-host instance of an engine that cannot run on Ray (llama.cpp)"),
    "cluster-tp-spans-hosts": (WARNING, False, "a tensor-parallel group larger than one member's GPUs"),
    "ray-one-cluster": (ERROR, False, "a host that is a member of two multi-host instances"),
    "ray-port-collision": (ERROR, False, "a Ray port that is also an instance's port"),
}
CLUSTER_RULES = tuple(CATALOGUE)
TOKEN_ENV = {"RAY_AUTH_MODE": "token"}


def read_cluster(raw):
    """``(cluster, problem)``: the normalised ``cluster`` field ({members, interface, head}), or None
    and the text of what is wrong with it."""
    if not isinstance(raw, dict):
        return None, f"cluster {raw!r} is not a mapping of members and interface."
    unknown = sorted(set(raw) - set(CLUSTER_KEYS), key=str)
    if unknown:
        return None, f"cluster has keys volta.serving does not read: {unknown} (it reads {list(CLUSTER_KEYS)})."
    members, interface = raw.get("members"), raw.get("interface")
    if not (isinstance(members, list) and all(isinstance(m, str) and _HOST_RE.fullmatch(m) for m in members)):
        return None, f"cluster.members {members!r} is not a list of inventory hostnames."
    if len(members) < 2:
        return None, f"cluster.members {members} names fewer than two hosts."
    twice = sorted({m for m in members if members.count(m) > 1})
    if twice:
        return None, f"cluster.members lists {', '.join(twice)} more than once."
    if not (isinstance(interface, str) and _IFACE_RE.fullmatch(interface)):
        return None, f"cluster.interface {interface!r} is not an interface name."
    return {"members": list(members), "interface": interface, "head": members[0]}, None


def role(host, cluster):
    """``head``, ``worker`` or None (the host is not one of the members)."""
    if host == cluster["head"]:
        return "head"
    return "worker" if host in cluster["members"] else None


def _theirs(info, inst):
    """The member's instance of the same name as *inst*, or None."""
    return (info.get("instances") or {}).get(inst["name"])


def _bad(rule, host, inst, field, text, why, fix):
    return finding(rule, host, inst["name"], field, text, why, fix)


def member_presence(host, inst, members):
    """Members that are not in the inventory, not in this run, or lack the instance."""
    cluster, out = inst["cluster"], []
    if role(host, cluster) is None:
        out.append(_bad("cluster-not-member", host, inst, "cluster.members",
                        f"this host declares the cluster instance but is not one of its members {cluster['members']}.",
                        "only the members run Ray for it; the instance would be half declared here.",
                        f"add {host} to cluster.members, or remove the instance from {host}'s volta_instances."))
    for member in cluster["members"]:
        info = members.get(member) or {}
        if not info.get("known"):
            out.append(_bad("cluster-member-unknown", host, inst, "cluster.members",
                            f"member {member} is not a host of the inventory.",
                            "each member must be managed: it runs Ray from its own engine install.",
                            f"add {member} to the inventory, or correct the name in cluster.members."))
        elif not info.get("in_play"):
            out.append(_bad("cluster-member-unknown", host, inst, "cluster.members",
                            f"member {member} is not in this run (--limit or the play's hosts).",
                            "a cluster is changed on every member at once; a run on part of it could leave "
                            "members with different engines.",
                            f"run with every member of {inst['name']} ({', '.join(cluster['members'])}) in --limit."))
        elif _theirs(info, inst) is None:
            out.append(_bad("cluster-member-mismatch", host, inst, "cluster.members",
                            f"member {member} has no instance named {inst['name']}.",
                            "every member declares the instance (its engine, model and GPUs are installed there).",
                            f"declare {inst['name']} in a group's volta_instances that every member is in."))
    return out


def _differs(mine, theirs, field):
    return (mine or {}).get(field) != (theirs or {}).get(field)


def member_sameness(host, inst, members):
    """Members whose instance, GPUs or engine pins differ from the head's."""
    cluster, out = inst["cluster"], []
    head = members.get(cluster["head"]) or {}
    ours = _theirs(head, inst)
    if ours is None:
        return out
    for member in cluster["members"][1:]:
        info = members.get(member) or {}
        theirs = _theirs(info, inst)
        if theirs is None:
            continue
        for field in SAME_FIELDS:
            if _differs(ours, theirs, field):
                out.append(_bad("cluster-member-mismatch", host, inst, field,
                                f"{field} is {ours.get(field)!r} on the head {cluster['head']} but "
                                f"{theirs.get(field)!r} on {member}.",
                                "the head starts one engine over every member's GPUs; each member's workers run "
                                "its own copy of the same model, settings and install.",
                                f"set {field} alike on every member (one group's volta_instances)."))
        for field in ("gpu_model", "compute_capability"):
            if _differs(head.get("server"), info.get("server"), field):
                out.append(_bad("cluster-gpu-mismatch", host, inst, f"volta_server.{field}",
                                f"{field} is {(head.get('server') or {}).get(field)!r} on {cluster['head']} but "
                                f"{(info.get('server') or {}).get(field)!r} on {member}.",
                                "every member builds and runs the same engine for the same GPU architecture.",
                                "make a cluster of servers with one GPU model."))
        engine = ours.get("engine")
        mine, theirs = (head.get("engine") or {}).get(engine), (info.get("engine") or {}).get(engine)
        if engine in RAY_ENGINES and mine != theirs:
            out.append(_bad("cluster-engine-mismatch", host, inst, "engine",
                            f"the {engine} pins are {mine} on {cluster['head']} but {theirs} on {member}.",
                            "Ray runs the engine's code on every member: version, torch and CUDA tag must be one.",
                            f"pin engine_{engine}_* in one place for every member (a group's variables)."))
    return out


def _unread(cluster, members):
    """The members in this run whose network facts were not read (None: not gathered), in member order."""
    return [m for m in cluster["members"]
            if (members.get(m) or {}).get("known") and (members.get(m) or {}).get("in_play")
            and (members.get(m) or {}).get("interfaces") is None]


def member_addresses(host, inst, members, facts_from="host"):
    """Members whose cluster interface is missing or has no IPv4 address. With *facts_from* ``controller``
    (preflight without reading the hosts) a member whose facts were not read is not checked: the rule did not
    run for it (``not_run`` says so), as every other rule that reads the host."""
    cluster, out = inst["cluster"], []
    for member in cluster["members"]:
        info = members.get(member) or {}
        if not info.get("known") or not info.get("in_play"):
            continue
        interfaces = info.get("interfaces")
        if interfaces is None and facts_from == "controller":
            continue
        if interfaces is None:
            out.append(_bad("cluster-interface", host, inst, "cluster.interface",
                            f"the network facts of {member} were not read.",
                            "Ray, NCCL and Gloo bind the cluster interface's address; it is read from the facts.",
                            "run the preflight play (it gathers the network facts) with every member."))
        elif not interfaces.get(cluster["interface"]):
            have = ", ".join(sorted(name for name, addr in interfaces.items() if addr)) or "none"
            out.append(_bad("cluster-interface", host, inst, "cluster.interface",
                            f"{member} has no IPv4 address on {cluster['interface']} (interfaces with one: {have}).",
                            "Ray, NCCL and Gloo of every member talk over that interface.",
                            "set cluster.interface to the cluster network's interface on every member."))
    return out


def not_run(instances, members, facts_from):
    """The summary's lines for cluster-interface where it did not run: on the controller, for the members of each
    cluster instance whose network facts were not read (``_skipped``'s kind of line)."""
    if facts_from != "controller":
        return []
    out = []
    for inst in instances:
        cluster = inst.get("cluster")
        unread = _unread(cluster, members) if cluster and inst.get("engine") in RAY_ENGINES else []
        if unread:
            out.append(f"cluster-interface (the address of {cluster['interface']} on every member of {inst['name']}): "
                       f"the network facts of {', '.join(unread)} were not read (volta_preflight_detect=false)")
    return out


def cluster_findings(host, inst, members, ray_ports, instance_ports, facts_from="host"):
    """Every finding about the cluster instance *inst* of *host* (normalised, ``inst['cluster']`` set);
    *facts_from* ``controller``: the hosts' facts were not read in this run (member_addresses)."""
    out = []
    if inst["engine"] not in RAY_ENGINES:
        out.append(_bad("cluster-engine", host, inst, "engine",
                        f"engine {inst['engine']} cannot span hosts over Ray.",
                        "only vLLM (and the 1Cat-vLLM fork) run on a Ray cluster.",
                        "use engine vllm or onecat for a multi-host instance, or one host per llama.cpp instance."))
        return out
    out += member_presence(host, inst, members)
    out += member_sameness(host, inst, members)
    out += member_addresses(host, inst, members, facts_from)
    out += cluster_shape(host, inst, ray_ports, instance_ports, members)
    return out


def cluster_shape(host, inst, ray_ports, instance_ports, members):
    """One Ray cluster per host; Ray's ports apart from the instances'; TP groups inside a host."""
    out = []
    mine = (members.get(host) or {}).get("clusters") or []
    if len(mine) > 1:
        out.append(_bad("ray-one-cluster", host, inst, "cluster",
                        f"this host is a member of {len(mine)} cluster instances ({', '.join(mine)}).",
                        "each host runs one Ray node (volta-ray.service) on one set of ports.",
                        "give each host at most one multi-host instance."))
    taken = sorted(set(ray_port_numbers(ray_ports)) & set(instance_ports))
    if taken:
        out.append(_bad("ray-port-collision", host, inst, "engine_service_ray_ports",
                        f"Ray's port(s) {taken} are also instance, service or backend ports of this host.",
                        "two listeners cannot share a port.",
                        "move engine_service_ray_ports (or the instances' ports) apart."))
    gpus, tp = inst["gpus"] or [], inst["tensor_parallel"]
    if tp and gpus and (tp > len(gpus) or len(gpus) % tp):
        out.append(_bad("cluster-tp-spans-hosts", host, inst, "tensor_parallel",
                        f"tensor_parallel {tp} does not divide the {len(gpus)} GPU(s) each member gives.",
                        "a tensor-parallel group across hosts all-reduces over the network on every layer.",
                        "keep tensor_parallel within one host's GPUs and use pipeline_parallel across hosts."))
    return out


def ray_port_numbers(ports):
    """Every TCP port number Ray listens on, the worker range expanded."""
    single = [int(v) for k, v in ports.items() if k not in ("worker_min", "worker_max")]
    return single + list(range(int(ports["worker_min"]), int(ports["worker_max"]) + 1))


# The ranks' own connections between members: NCCL's bootstrap and socket transport, Gloo and torch's TCP
# store listen on ports the kernel picks from net.ipv4.ip_local_port_range (Linux's default below); none
# of them takes a fixed port or range. Opened between members only, like Ray's.
RANK_PORTS = "32768-60999"


def tcp_ports(ports):
    """What the firewall opens between members, as it writes them: each Ray port, Ray's worker range
    ``a-b``, then the ranks' range (RANK_PORTS); strings."""
    single = sorted(int(v) for k, v in ports.items() if k not in ("worker_min", "worker_max"))
    return [str(p) for p in single] + [f"{int(ports['worker_min'])}-{int(ports['worker_max'])}", RANK_PORTS]


def ray_argv(program, plan, temp_dir):
    """``ray start`` for this member, in the foreground (systemd keeps it): head or worker."""
    ports = plan["ports"]
    argv = [program, "start", "--block", f"--node-ip-address={plan['address']}", f"--num-gpus={len(plan['gpus'])}",
            "--disable-usage-stats", f"--temp-dir={temp_dir}"]
    if plan["role"] == "head":
        # No dashboard: its HTTP API (jobs) runs code for whoever reaches it.
        argv += ["--head", "--include-dashboard=false"]
    else:
        argv.append(f"--address={plan['head_address']}:{ports['gcs']}")
    for name, flag in PORT_FLAGS.items():
        if plan["role"] == "head" or name not in HEAD_ONLY_PORTS:
            argv.append(f"{flag}={ports[name]}")
    return argv


def rank_env(plan):
    """What NCCL, Gloo and vLLM bind to on a member: the cluster interface and its address."""
    return {"NCCL_SOCKET_IFNAME": plan["interface"], "GLOO_SOCKET_IFNAME": plan["interface"],
            "VLLM_HOST_IP": plan["address"]}


def ray_plan(host, inst, members, ports, secrets_dir):
    """The plan's ``ray`` entry of *host* for the cluster instance *inst* (no findings left)."""
    cluster = inst["cluster"]
    addresses = {m: (members[m].get("interfaces") or {}).get(cluster["interface"]) for m in cluster["members"]}
    plan = {
        "instance": inst["name"],
        "engine": inst["engine"],
        "role": role(host, cluster),
        "head": cluster["head"],
        "interface": cluster["interface"],
        "address": addresses[host],
        "head_address": addresses[cluster["head"]],
        "members": [{"host": m, "address": addresses[m]} for m in cluster["members"]],
        "peers": sorted(addresses[m] for m in cluster["members"] if m != host),
        "ports": dict(ports),
        "tcp_ports": tcp_ports(ports),
        "gpus": list(inst["gpus"]),
        "cuda_visible_devices": ",".join(str(g) for g in inst["gpus"]),
        "unit": RAY_UNIT,
        "token_file": f"{secrets_dir.rstrip('/')}/ray-{inst['name']}.token",
    }
    plan["env"] = dict(sorted({**TOKEN_ENV, "RAY_AUTH_TOKEN_PATH": plan["token_file"],
                               "RAY_USAGE_STATS_ENABLED": "0", "CUDA_VISIBLE_DEVICES": plan["cuda_visible_devices"],
                               **rank_env(plan)}.items()))
    return plan


def head_env(plan):
    """What the head's ``vllm serve`` adds to its environment: the cluster's address and token, its interface."""
    return {**TOKEN_ENV, "RAY_AUTH_TOKEN_PATH": plan["token_file"],
            "RAY_ADDRESS": f"{plan['head_address']}:{plan['ports']['gcs']}", **rank_env(plan)}


def missing_members(plan, alive):
    """The members whose address is not among the *alive* Ray nodes' addresses, in member order."""
    up = set(alive)
    return [m for m in plan["members"] if m["address"] not in up]


def join_cluster(entry, plan):
    """Make the head's plan entry of the cluster instance run over Ray: the executor flag after the
    parallel sizes, the cluster's environment instead of the loopback ranks', its members' addresses."""
    argv = entry["argv"]
    at = argv.index("--pipeline-parallel-size") + 2 if "--pipeline-parallel-size" in argv else len(argv)
    entry["argv"] = [*argv[:at], "--distributed-executor-backend", "ray", *argv[at:]]
    entry["env"] = dict(sorted({**entry["env"], **head_env(plan)}.items()))
    entry["ip_allow"] = sorted({m["address"] for m in plan["members"]})
    # vLLM 0.21.0 exits 0 when a Ray worker dies (the API server's watchdog stops it after EngineDeadError:
    # vllm/entrypoints/launcher.py; vllm-project/vllm#48966): on-failure would leave it stopped.
    entry["restart"] = "always"
    entry["cluster"] = {"role": plan["role"], "unit": plan["unit"], "members": [m["host"] for m in plan["members"]]}
    return entry


# The lowest Ray the multi-host path takes: vLLM 0.21.0 refuses Ray below 2.43.0 for its compiled graphs
# (vllm/v1/executor/ray_executor.py, _check_ray_cgraph_installation); Ray's token authentication, which
# every cluster here turns on, came in 2.52.0 (docs.ray.io, ray-security/token-auth).
RAY_FLOOR = "2.52.0"


def ray_pin_problem(requires, pin, engine):
    """Why the Ray pin *pin* does not fit the engine (*requires*: its Requires-Dist), or ""."""
    from ansible_collections.volta.serving.plugins.module_utils._pyreq import (
        RequirementError,
        Version,
        parse_requirement,
        specifier_contains,
    )

    try:
        version = Version(str(pin))
    except (RequirementError, ValueError):
        return f"engine_ray_version {pin!r} is not a version. Fix: pin a Ray release such as 2.54.0."
    for text in requires or []:
        req = parse_requirement(text)
        if req["key"] == "ray" and req["specifier"] and not specifier_contains(req["specifier"], version):
            return (f"engine_ray_version {pin} is outside what {engine} requires ({text}). Why: Ray runs the "
                    "engine's code on every member. Fix: pin a Ray inside that range.")
    if version < Version(RAY_FLOOR):
        return (f"engine_ray_version {pin} is below {RAY_FLOOR}. Why: the cluster runs with Ray's token "
                f"authentication, which Ray has from {RAY_FLOOR}. Fix: pin ray {RAY_FLOOR} or newer (2.54.0).")
    return ""


def ray_unit(plan, engines_root, service_home):
    """*plan* with what engine_service's unit template reads of an instance: the Ray node of this member
    runs from the engine's current install, under the engine account, its temp dir in the account's home
    (the head's vLLM, another unit, reaches the raylet's sockets there; /tmp is private to each unit)."""
    program = f"{engines_root.rstrip('/')}/{plan['engine']}/current/venv/bin/ray"
    plan.update({
        "name": "ray",
        "served_model_name": plan["instance"],
        "bind_host": plan["address"],
        "backend_port": plan["ports"]["gcs"] if plan["role"] == "head" else plan["ports"]["node_manager"],
        # Ray makes its temp dir world-writable (0777); the directory above it, the role's (0750), keeps
        # everyone but the engine account out.
        "ray_dir": f"{service_home.rstrip('/')}/ray",
        "temp_dir": f"{service_home.rstrip('/')}/ray/tmp",
        "environment_file": None,
        "api_key_env": None,
        "engine_dir": f"{engines_root.rstrip('/')}/{plan['engine']}/current",
        "ip_allow": sorted({m["address"] for m in plan["members"]}),
    })
    plan["argv"] = ray_argv(program, plan, plan["temp_dir"])
    return plan


# The lowest port a Ray port may be: Ray runs as the engine account, which cannot bind below 1024.
RAY_PORT_MIN = 1024


def _ray_port(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def check_ray_ports(value):
    """The settings registry's check of engine_service_ray_ports (fn(value) -> None | (why, fix)): every key of
    PORT_FLAGS, each a port from RAY_PORT_MIN to 65535 (they reach ``ray start``'s command line and the
    firewall), the worker range in order, no port twice."""
    keys = ", ".join(PORT_FLAGS)
    fix = (f"set {{var}} to a mapping of every one of {keys} to a port from {RAY_PORT_MIN} to 65535, no two alike "
           "(a mapping set in the inventory replaces the role's whole default)")
    if not isinstance(value, dict):
        return f"{json.dumps(value, default=str)} is not a mapping of Ray's ports", fix
    unknown = sorted(str(k) for k in value if k not in PORT_FLAGS)
    missing = [k for k in PORT_FLAGS if k not in value]
    keys_wrong = ([f"has keys Ray has no port for: {', '.join(unknown)}"] if unknown else []) + (
        [f"lacks {', '.join(missing)}"] if missing else [])
    if keys_wrong:
        return "it " + " and ".join(keys_wrong), fix
    ports = {k: _ray_port(v) for k, v in value.items()}
    bad = [f"{k}: {json.dumps(value[k], default=str)}" for k, p in ports.items()
           if p is None or not RAY_PORT_MIN <= p <= 65535]
    if bad:
        return f"{'; '.join(bad)} {'is' if len(bad) == 1 else 'are'} not a port from {RAY_PORT_MIN} to 65535", fix
    if ports["worker_min"] > ports["worker_max"]:
        return f"worker_min {ports['worker_min']} is above worker_max {ports['worker_max']}", fix
    single = [p for k, p in ports.items() if k not in ("worker_min", "worker_max")]
    twice = sorted({p for p in single if single.count(p) > 1
                    or ports["worker_min"] <= p <= ports["worker_max"]})
    if twice:
        return f"port(s) {twice} are given twice (or inside the worker range)", fix
    return None
