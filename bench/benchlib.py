"""Shared helpers of the bench/ scripts: lab hosts, inventories, timed ansible-playbook runs, the API probe.

Everything runs on this machine against the lab (tests/lab): hosts are the lab's systemd containers
on the `volta-lab` network, started and removed with tests/lab/playbooks/demo-hosts.yml.
"""

from __future__ import annotations

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TOP = Path(__file__).resolve().parents[1]
VENV_BIN = TOP / ".venv" / "bin"
WORK = TOP / ".cache" / "bench"
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


def env():
    out = dict(os.environ)
    out["PATH"] = f"{VENV_BIN}:{out.get('PATH', '')}"
    out.update({"ANSIBLE_INJECT_FACT_VARS": "false", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
                "PY_COLORS": "0"})
    return out


def say(msg):
    print(f"bench: {msg}", flush=True)


def need_lab():
    if not (VENV_BIN / "ansible-playbook").exists():
        sys.exit("bench: no controller venv; run `make lab` first (it installs and starts the lab)")
    state = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", "volta-lab-repo"],
                           capture_output=True, text=True, check=False)
    if state.stdout.strip() != "true":
        sys.exit("bench: the lab's repository server is not running; run `make lab` first")


def children_cpu():
    """CPU seconds (user + system) of this process's finished children: the controller's share."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def machine_cpu(stat_text):
    """(busy, idle) CPU seconds of the whole machine, summed over its cores, from the text of /proc/stat.

    busy is user + nice + system + irq + softirq + steal, idle is idle + iowait: every process counts,
    the lab's containers and the Docker daemon as much as the controller.
    """
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(v) for v in fields[1:9]]
            hz = os.sysconf("SC_CLK_TCK")
            busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
            return busy / hz, (ticks[3] + ticks[4]) / hz
    raise ValueError("no aggregate cpu line in /proc/stat")


def container_cpu(container_id, root="/sys/fs/cgroup"):
    """CPU seconds a container has used so far (its cgroup, v1 cpuacct or v2 cpu.stat), None when unreadable."""
    v1 = Path(root, "cpuacct", "docker", container_id, "cpuacct.usage")
    if v1.is_file():
        return int(v1.read_text(encoding="utf-8")) / 1e9
    for v2 in (Path(root, "system.slice", f"docker-{container_id}.scope", "cpu.stat"),
               Path(root, "docker", container_id, "cpu.stat")):
        if v2.is_file():
            for line in v2.read_text(encoding="utf-8").splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    return None


def hosts_cpu(names):
    """CPU seconds used so far by the containers of the lab hosts names, summed; None when one is unreadable."""
    ids = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", *names], capture_output=True, text=True,
                         check=False).stdout.split()
    used = [container_cpu(i) for i in ids]
    return None if len(ids) != len(names) or None in used else sum(used)


def playbook(args, log, extra_env=None, times=None, top=None):
    """Run ansible-playbook from the project root (or the checkout top); return (rc, seconds, recap rows).
    Output goes to log.

    With times=FILE, bench/callbacks/task_times.py writes each task's wall time there. The
    controller's CPU seconds of the last run are kept in LAST["cpu_seconds"], the whole machine's busy
    and idle CPU seconds in LAST["machine_busy_seconds"] and LAST["machine_idle_seconds"].
    """
    cmd = [str(VENV_BIN / "ansible-playbook"), *args]
    extra = dict(extra_env or {})
    if times:
        extra.update({"ANSIBLE_CALLBACK_PLUGINS": str(TOP / "bench" / "callbacks"), "VOLTA_BENCH_TIMES": str(times)})
    began, cpu = time.monotonic(), children_cpu()
    busy, idle = machine_cpu(Path("/proc/stat").read_text(encoding="utf-8"))
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        rc = subprocess.run(cmd, cwd=top or TOP, env={**env(), **extra}, stdout=out,
                            stderr=subprocess.STDOUT, check=False).returncode
    took = time.monotonic() - began
    LAST["cpu_seconds"] = round(children_cpu() - cpu, 1)
    busy_after, idle_after = machine_cpu(Path("/proc/stat").read_text(encoding="utf-8"))
    LAST["machine_busy_seconds"] = round(busy_after - busy, 1)
    LAST["machine_idle_seconds"] = round(idle_after - idle, 1)
    return rc, took, recap(log)


LAST = {}


def reference(inventory, host, log):
    """(seconds, controller CPU seconds) of bench/playbooks/reference.yml on host: the machine's speed now.

    A fixed Ansible workload with nothing of this collection in it; bench/fleet and bench/compare run it
    right before each rerun they measure.
    """
    rc, took, rows = playbook(["bench/playbooks/reference.yml", "-i", inventory, "-e", f"bench_host={host}"], log)
    row = rows.get(host)
    if rc or row is None or row["failed"] or row["unreachable"]:
        sys.exit(f"bench: the reference workload failed on {host} (rc {rc}; log: {log})")
    return round(took, 1), LAST["cpu_seconds"]


def per_reference(runs, size):
    """The median of each run's controller CPU per host divided by its own reference run's CPU, or None.

    runs: [{"cpu_seconds", "reference_cpu_seconds"}]. Pair by pair, then the median: a rerun and its
    reference ran minutes apart, so the machine's drift between pairs cancels.
    """
    ratios = [r["cpu_seconds"] / size / r["reference_cpu_seconds"] for r in runs if r["reference_cpu_seconds"]]
    return statistics.median(ratios) if ratios else None


def recap(log):
    """The PLAY RECAP rows of the last run in log: {host: {ok, changed, unreachable, failed, skipped}}."""
    text = Path(log).read_text(encoding="utf-8").rsplit("PLAY RECAP", 1)
    rows = {}
    if len(text) == 2:
        for line in text[1].splitlines():
            m = RECAP.match(line.strip())
            if m:
                rows[m.group(1)] = dict(zip(("ok", "changed", "unreachable", "failed", "skipped"),
                                            map(int, m.groups()[1:]), strict=True))
    return rows


def hosts(names_profiles, log, state="started"):
    """Start (or remove) lab hosts: [(name, distro, gpu_profile)]."""
    spec = {"demo_state": state, "lab_owner": "volta-bench",
            "demo_hosts": [{"name": n, "distro": d, "gpu_profile": p} for n, d, p in names_profiles]}
    WORK.mkdir(parents=True, exist_ok=True)
    vars_file = WORK / "hosts-vars.json"
    vars_file.write_text(json.dumps(spec), encoding="utf-8")
    rc, took, _rows = playbook(["tests/lab/playbooks/demo-hosts.yml", "-e", f"@{vars_file}"], log)
    if rc:
        sys.exit(f"bench: lab hosts did not {'start' if state == 'started' else 'go'} (log: {log})")
    return took


def docker(host, *argv, check=True):
    return subprocess.run(["docker", "exec", host, *argv], capture_output=True, text=True, check=check)


def probe_start(host, url, tag):
    subprocess.run(["docker", "cp", str(TOP / "tests/lab/probe/api-probe"), f"{host}:/usr/local/bin/api-probe"],
                   check=True, capture_output=True)
    docker(host, "systemctl", "stop", "volta-lab-probe.service", check=False)
    log = f"/var/log/volta-lab-probe-{tag}.log"
    docker(host, "rm", "-f", log)
    docker(host, "systemd-run", "--unit=volta-lab-probe", "--collect", "--quiet", "/usr/bin/python3",
           "/usr/local/bin/api-probe", "run", url, log)
    for _attempt in range(100):
        got = docker(host, "sh", "-c", f"grep -c ' 200 ' {log} || true").stdout.strip()
        if got.isdigit() and int(got) >= 5:
            return log
        time.sleep(0.2)
    sys.exit(f"bench: {url} does not answer on {host}; nothing to measure")


def probe_report(host, log, start):
    time.sleep(2)
    docker(host, "systemctl", "stop", "volta-lab-probe.service", check=False)
    out = docker(host, "python3", "/usr/local/bin/api-probe", "report", log, "--start", f"{start:.3f}").stdout
    return json.loads(out)


def median(values):
    return round(statistics.median(values), 2) if values else None
