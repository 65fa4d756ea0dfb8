"""bench/benchlib.py's CPU accounting: /proc/stat and the containers' cgroups (v1 and v2 layouts)."""

import importlib.util
import os
from pathlib import Path

import pytest

# The bench directory is not a package: load its benchlib.py by path.
_BENCHLIB = Path(__file__).resolve().parents[3] / "bench" / "benchlib.py"
_SPEC = importlib.util.spec_from_file_location("benchlib", _BENCHLIB)
benchlib = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(benchlib)

# The aggregate line and one core's line as Linux 6.x writes them (user nice system idle iowait irq
# softirq steal guest guest_nice), from this build machine.
STAT = """cpu  26726 10 10124 155423 1217 5 333 491 0 0
cpu0 13363 5 5062 77711 608 2 166 245 0 0
intr 1 2 3
"""


def test_busy_counts_user_nice_system_irq_softirq_steal_and_idle_counts_iowait():
    hz = os.sysconf("SC_CLK_TCK")
    busy, idle = benchlib.machine_cpu(STAT)
    assert busy == pytest.approx((26726 + 10 + 10124 + 5 + 333 + 491) / hz)
    assert idle == pytest.approx((155423 + 1217) / hz)


def test_a_stat_without_the_aggregate_line_is_refused():
    with pytest.raises(ValueError, match="no aggregate cpu line"):
        benchlib.machine_cpu("cpu0 1 2 3 4 5 6 7 8\n")


def test_container_cpu_reads_cgroup_v1_nanoseconds(tmp_path):
    path = tmp_path / "cpuacct" / "docker" / "abc"
    path.mkdir(parents=True)
    (path / "cpuacct.usage").write_text("9233000000\n", encoding="utf-8")
    assert benchlib.container_cpu("abc", root=tmp_path) == pytest.approx(9.233)


def test_container_cpu_reads_cgroup_v2_microseconds(tmp_path):
    path = tmp_path / "system.slice" / "docker-abc.scope"
    path.mkdir(parents=True)
    (path / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
                                   encoding="utf-8")
    assert benchlib.container_cpu("abc", root=tmp_path) == pytest.approx(1.5)


def test_container_cpu_is_none_for_a_container_without_a_cgroup(tmp_path):
    assert benchlib.container_cpu("gone", root=tmp_path) is None


def _fleet():
    import sys
    from importlib.machinery import SourceFileLoader

    sys.modules.setdefault("benchlib", benchlib)  # bench/fleet imports it from its own directory
    loader = SourceFileLoader("bench_fleet", str(_BENCHLIB.parent / "fleet"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_fleet", loader))
    loader.exec_module(module)
    return module


def _figures(rerun, busy, hosts, cores=2):
    return {"converge_seconds": 600.0, "rerun_seconds": rerun, "rerun_run_per_host": [76],
            "rerun_skipped_per_host": [54], "rerun_controller_cpu_seconds_per_host": 17.0,
            "rerun_machine_busy_seconds": busy, "rerun_hosts_cpu_seconds": hosts,
            "rerun_cpu_floor_seconds": round(busy / cores, 1), "cores": cores, "converge_llamacpp_seeded": False}


def test_the_table_gives_the_cpu_floor_of_the_larger_fleet_against_the_smaller_ones_rerun():
    # Figures of one 1-host and one 8-host rerun on the 2-core build machine (2026-12-02).
    text = _fleet().table({1: _figures(31.0, 34.6, 9.9), 8: _figures(126.2, 242.6, 93.4)}, [1, 8])
    assert "| no-change rerun (s), median | 31.0 | 126.2 | 4.07x |" in text
    assert "| rerun: CPU seconds of the hosts' containers | 9.9 | 93.4 | - |" in text
    assert "busy for 242.6 s of CPU" in text
    assert "cannot take less than 3.91x the 1-host rerun here." in text


def _rerun(seconds, cpu, ref_cpu, busy=20.0):
    return {"seconds": seconds, "cpu_seconds": cpu, "reference_seconds": 12.0, "reference_cpu_seconds": ref_cpu,
            "rerun_machine_busy_seconds": busy, "rerun_machine_idle_seconds": 10.0, "rerun_hosts_cpu_seconds": 6.0,
            "rerun_cpu_floor_seconds": round(busy / 2, 1), "cores": 2}


def test_the_rerun_summary_takes_the_medians_and_the_reference_ratio_pair_by_pair():
    # Three 1-host reruns of 2026-12-06 on one build machine whose speed drifted between them: the CPU
    # seconds spread by a half, the ratio to each rerun's own reference run far less.
    reruns = [_rerun(18.1, 12.1, 5.9), _rerun(30.2, 21.2, 9.8), _rerun(25.6, 17.0, 8.1)]
    summary = _fleet().rerun_summary(reruns, 1)
    assert summary["rerun_seconds"] == 25.6
    assert summary["rerun_controller_cpu_seconds_per_host"] == 17.0
    assert summary["reference_cpu_seconds"] == 8.1
    # Ratios 2.05, 2.16 and 2.10: the median is the third pair's, not 17.0 / 8.1 of the separate medians.
    assert summary["rerun_cpu_per_host_in_reference"] == 2.1
    assert summary["reruns"] == reruns


def test_the_rerun_summary_divides_the_cpu_by_the_fleet_size():
    summary = _fleet().rerun_summary([_rerun(100.0, 80.0, 8.0), _rerun(104.0, 96.0, 8.0)], 8)
    assert summary["rerun_controller_cpu_seconds_per_host"] == 11.0
    assert summary["rerun_cpu_per_host_in_reference"] == 1.38


def test_the_table_gives_the_reference_and_the_ratio():
    figures = {1: {**_figures(18.1, 19.4, 6.0), "reference_cpu_seconds": 5.9},
               8: {**_figures(102.2, 196.6, 74.5), "reference_cpu_seconds": 6.4}}
    figures[1]["rerun_cpu_per_host_in_reference"] = 2.05
    figures[8]["rerun_cpu_per_host_in_reference"] = 2.03
    text = _fleet().table(figures, [1, 8])
    assert "| reference workload: controller CPU seconds, median | 5.9 | 6.4 | - |" in text
    assert "| rerun controller CPU per host / reference CPU, median | 2.05 | 2.03 | - |" in text
