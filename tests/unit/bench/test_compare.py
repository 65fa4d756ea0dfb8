"""bench/compare: the medians of interleaved reruns of two checkouts, each against its reference run."""

import importlib.util
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

_BENCH = Path(__file__).resolve().parents[3] / "bench"


def _compare():
    spec = importlib.util.spec_from_file_location("benchlib", _BENCH / "benchlib.py")
    benchlib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchlib)
    sys.modules.setdefault("benchlib", benchlib)  # bench/compare imports it from its own directory
    loader = SourceFileLoader("bench_compare", str(_BENCH / "compare"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_compare", loader))
    loader.exec_module(module)
    return module


def _run(side, cpu, ref, seconds=25.0, tasks=107):
    return {"side": side, "seconds": seconds, "cpu_seconds": cpu, "reference_cpu_seconds": ref,
            "tasks_per_host": tasks}


def test_each_side_gets_its_medians_and_the_ratio_to_its_own_reference_runs():
    # Three rounds of 2026-12-06 on one converged lab host: the machine slowed down between rounds.
    runs = [_run("before", 16.7, 7.6), _run("after", 18.3, 8.5, tasks=108),
            _run("before", 16.6, 8.3), _run("after", 18.3, 9.0, tasks=108),
            _run("before", 19.1, 9.9), _run("after", 18.9, 9.1, tasks=108)]
    result = _compare().summary(runs, 1)
    assert list(result) == ["before", "after"]
    assert result["before"]["cpu_seconds_per_host"] == 16.7
    assert result["before"]["reference_cpu_seconds"] == 8.3
    # 16.7/7.6 = 2.197, 16.6/8.3 = 2.0, 19.1/9.9 = 1.929: the median pair, not 16.7/8.3.
    assert result["before"]["cpu_per_host_in_reference"] == 2.0
    assert result["after"]["tasks_per_host"] == [108]
    assert result["after"]["runs"] == 3


def test_the_cpu_is_per_host_of_the_inventory():
    result = _compare().summary([_run("before", 80.0, 8.0), _run("after", 64.0, 8.0)], 8)
    assert result["before"]["cpu_seconds_per_host"] == 10.0
    assert result["after"]["cpu_per_host_in_reference"] == 1.0


def test_the_table_has_a_column_per_side():
    module = _compare()
    text = module.table(module.summary([_run("before", 12.0, 6.0), _run("after", 9.0, 6.0)], 1), 1)
    assert "| no-change rerun, 1 host(s) | before | after |" in text
    assert "| controller CPU per host / the reference run's CPU, median | 2.0 | 1.5 |" in text


def test_the_hosts_are_read_from_a_bench_fleet_inventory(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  children:\n    volta:\n      hosts:\n        fleet-02: {ansible_host: volta-fleet-02}\n"
        "        fleet-01: {ansible_host: volta-fleet-01}\n", encoding="utf-8")
    assert _compare().inventory_hosts(tmp_path) == ["fleet-01", "fleet-02"]
