"""tests/molecule/run: the lines it prints last to say why a scenario failed.

The log lines below are in the shape of this project's scenario logs (seconds since the start, molecule's
bar, Ansible 2.19's YAML callback), taken from a driver scenario log and shortened.
"""

import importlib.machinery
import importlib.util
import os
from pathlib import Path

_RUN = Path(__file__).resolve().parents[2] / "molecule" / "run"
_LOADER = importlib.machinery.SourceFileLoader("molecule_run", str(_RUN))
_SPEC = importlib.util.spec_from_loader("molecule_run", _LOADER)
runner = importlib.util.module_from_spec(_SPEC)
_LOADER.exec_module(runner)

RESCUED = """\
   64.4   \x1b[2m\x1b[31m│\x1b[0m TASK [volta.serving.nvidia_driver : Fail when the requested driver is not
   64.4   \x1b[2m\x1b[31m│\x1b[0m   available] ***
   64.4   \x1b[2m\x1b[31m│\x1b[0m [ERROR]: Task failed: Action failed: driver-ubuntu: nvidia-driver-580-server
   64.4   \x1b[2m\x1b[31m│\x1b[0m fatal: [driver-ubuntu]: FAILED! =>
   64.4   \x1b[2m\x1b[31m│\x1b[0m     msg: 'driver-ubuntu: nvidia-driver-580-server 580.1.2 is not available.'
   64.4   \x1b[2m│\x1b[0m
   64.4   \x1b[2m│\x1b[0m TASK [The failure names the package] ***
   64.5   \x1b[2m│\x1b[0m ok: [driver-ubuntu] =>
"""
IGNORED = """\
   66.0   \x1b[2m│\x1b[0m TASK [Read the unit that may be missing] ***
   66.1   \x1b[2m│\x1b[0m fatal: [driver-ubuntu]: FAILED! =>
   66.1   \x1b[2m│\x1b[0m     msg: Could not find the requested service
   66.1   \x1b[2m│\x1b[0m ...ignoring
"""
REAL = """\
   69.1   \x1b[2m│\x1b[0m TASK [volta.serving.nvidia_driver : Verify the nvidia-uvm device] ***
   69.1   \x1b[2m│\x1b[0m [ERROR]: Task failed: Action failed: driver-ubuntu: /dev/nvidia-uvm is missing
   69.1   \x1b[2m│\x1b[0m fatal: [driver-ubuntu]: FAILED! =>
   69.1   \x1b[2m│\x1b[0m     assertion: __nvidia_driver_uvm_ok | bool
   69.1   \x1b[2m│\x1b[0m     msg: 'driver-ubuntu: /dev/nvidia-uvm is missing after modprobe nvidia-uvm'
   69.2   \x1b[2m│\x1b[0m PLAY RECAP *********************************************************************
   69.2   \x1b[2m│\x1b[0m driver-ubuntu              : ok=40   changed=3    unreachable=0    failed=1
   69.3 CRITICAL Ansible return code was 2, command was: ansible-playbook --inventory /tmp/x converge.yml
   70.0   \x1b[2m│\x1b[0m TASK [Remove each platform's container] ***
   70.1   \x1b[2m│\x1b[0m failed: [localhost] (item=driver-ubuntu) => changed=false
"""


def test_the_cause_is_the_last_failure_neither_rescued_nor_ignored_before_molecule_gave_up():
    why = runner.why_failed(RESCUED + IGNORED + REAL)
    assert why[0].endswith("TASK [volta.serving.nvidia_driver : Verify the nvidia-uvm device] ***")
    assert why[1].endswith("fatal: [driver-ubuntu]: FAILED! =>")
    assert any("/dev/nvidia-uvm is missing after modprobe nvidia-uvm" in row for row in why)
    assert why[-1].endswith("failed=1")  # the recap, not what destroy printed after molecule gave up
    assert not any("\x1b" in row for row in why)


def test_a_wrapped_task_header_keeps_both_of_its_lines():
    header_and_failure = "".join(RESCUED.splitlines(keepends=True)[:5])
    why = runner.why_failed(header_and_failure + "   69.3 CRITICAL Ansible return code was 2\n")
    assert why[0].endswith("Fail when the requested driver is not")
    assert why[1].endswith("available] ***")
    assert "is not available" in why[3]


def test_a_failure_that_was_ignored_is_not_the_cause():
    why = runner.why_failed(RESCUED + IGNORED)
    assert "requested driver" in why[0]


def test_without_a_failed_task_the_last_lines_are_the_cause_and_long_lines_are_cut():
    text = "".join(f"{n:7.1f} line {n}\n" for n in range(40)) + "x" * 500 + "\n"
    why = runner.why_failed(text, keep=5)
    assert len(why) == 5
    assert why[0].endswith("line 36")
    assert why[-1] == "x" * 200


def _fake_molecule(monkeypatch, tmp_path, outcomes):
    """Replace `molecule test` with outcomes[name]: one exit status per try, each try writing a log."""
    monkeypatch.setattr(runner, "TOP", tmp_path)
    monkeypatch.setattr(runner, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(runner.time, "sleep", lambda _: None)
    tries = {}

    def run_scenario(name, lane_number, attempt, lock):
        tries[name] = attempt
        rc = outcomes[name][attempt - 1]
        body = REAL if rc else "   10.0 INFO     x ➜ verify: Executed: Successful\n"
        (tmp_path / "logs" / f"{name}.log").write_text(body.replace("nvidia-uvm device", f"{name} try {attempt}"))
        return rc, 10.0

    monkeypatch.setattr(runner, "run_scenario", run_scenario)
    return tries


def test_a_scenario_that_passes_at_its_second_try_is_reported_so_with_why_the_first_failed(
        monkeypatch, tmp_path, capsys):
    tries = _fake_molecule(monkeypatch, tmp_path, {"flaky": [2, 0], "steady": [0]})
    assert runner.main(["--lanes", "1", "--retries", "1", "flaky", "steady"]) == 0
    out = capsys.readouterr().out
    assert tries == {"flaky": 2, "steady": 1}
    assert "    flaky                passed at try 2" in out
    assert "    steady               passed " in out
    why = out[out.index("=== why flaky failed at try1"):]
    assert "Verify the flaky try 1] ***" in why
    assert (tmp_path / "logs" / "flaky.try1.log").exists()


def test_a_scenario_that_fails_every_try_fails_the_run_and_nothing_new_starts(monkeypatch, tmp_path, capsys):
    tries = _fake_molecule(monkeypatch, tmp_path, {"broken": [2, 2], "later": [0]})
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "broken.try3.log").write_text("from an earlier run\n")
    assert runner.main(["--lanes", "1", "--retries", "1", "broken", "later"]) == 1
    out = capsys.readouterr().out
    assert tries == {"broken": 2}
    assert "    broken               FAILED" in out and "    later                not run" in out
    assert out.rstrip().splitlines()[-1].endswith("failed=1")
    assert "Verify the broken try 1] ***" in out and "Verify the broken try 2] ***" in out
    assert not (tmp_path / "logs" / "broken.try3.log").exists()


def test_without_retries_a_failure_is_not_run_again(monkeypatch, tmp_path, capsys):
    tries = _fake_molecule(monkeypatch, tmp_path, {"broken": [2, 0]})
    assert runner.main(["broken"]) == 1
    assert tries == {"broken": 1}
    assert "    broken               FAILED" in capsys.readouterr().out


def test_cpu_times_reads_idle_and_iowait_against_every_tick(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 5 50 800 40 0 5 0 0 0\ncpu0 50 2 25 400 20 0 2 0 0 0\n")
    hz = os.sysconf("SC_CLK_TCK")
    stamp, busy, idle = runner.cpu_times(stat)
    assert (round(busy * hz), round(idle * hz)) == (160, 840) and stamp > 0
    assert runner.cpu_times(tmp_path / "missing") is None
    assert runner.idle_share((0, 160, 840), (10, 300, 900)) == 0.3
    assert runner.idle_share((0, 160, 840), (10, 160, 840)) is None


def _watch(monkeypatch, idle_per_step, room=lambda: True, steps=8):
    """watch_idle over fake samples, 10 s apart, each step idle for the given share; the idle shares it opened at."""
    clock = {"t": 0, "n": 0}
    opened = []

    def cpu_times():
        share = idle_per_step[min(clock["n"], len(idle_per_step) - 1)]
        clock["idle"] = clock.get("idle", 0) + round(share * 200)
        clock["busy"] = clock.get("busy", 0) + 200 - round(share * 200)
        clock["n"] += 1
        clock["t"] += 10
        return clock["t"], clock["busy"], clock["idle"]

    monkeypatch.setattr(runner, "cpu_times", cpu_times)
    monkeypatch.setattr(runner.time, "sleep", lambda _: None)
    runner.watch_idle(lambda: clock["n"] < steps, room, opened.append)
    return opened


def test_an_extra_lane_opens_after_the_machine_was_idle_a_whole_window_and_the_window_starts_again(monkeypatch):
    # busy for three steps, then 50% idle: the window of samples 2 to 5 (30 s) is a third idle, which opens a
    # lane; each later opening needs a whole window of its own (samples 5 to 8, 8 to 11), half idle
    opened = _watch(monkeypatch, [0.0, 0.0, 0.0, 0.5], steps=12)
    assert [round(share, 3) for share in opened] == [0.333, 0.5, 0.5]


def test_no_lane_opens_on_a_busy_machine_or_without_room(monkeypatch):
    assert _watch(monkeypatch, [0.15]) == []
    assert _watch(monkeypatch, [0.9], room=lambda: False) == []


def test_a_scenario_runs_in_an_extra_lane_while_the_machine_is_idle(monkeypatch, tmp_path, capsys):
    _fake_molecule(monkeypatch, tmp_path, {"first": [0], "second": [0], "third": [0]})
    lanes = {}
    fake = runner.run_scenario

    def run_scenario(name, lane_number, attempt, lock):
        lanes[name] = lane_number
        if lane_number == 1:  # the base lane stays on its scenario until the extra lane has taken one
            while len(lanes) < 2:
                runner.time.monotonic()
        return fake(name, lane_number, attempt, lock)

    monkeypatch.setattr(runner, "run_scenario", run_scenario)
    monkeypatch.setattr(runner, "watch_idle", lambda keep_going, room, open_lane: open_lane(0.4))
    assert runner.main(["--lanes", "1", "--max-lanes", "2", "first", "second", "third"]) == 0
    out = capsys.readouterr().out
    assert "=== lane 2 opens for one scenario: the machine was 40% idle over the last 30 s" in out
    assert sorted(lanes.values()) == [1, 1, 2]
    assert "3 of 3 scenario(s) ran in" in out and "on 1 lane(s) and 1 extra lane(s) opened while" in out


# A first run and its rerun of the site scenario, in the shape of its log (molecule's bar, wrapped lines).
SITE = """\
    9.0 INFO     site ➜ prepare: Executing
   10.0   \x1b[2m│\x1b[0m [WARNING]: a warning of the prepare, which is not the playbooks' run
   12.9 INFO     site ➜ converge: Executing
   16.7   \x1b[35m│\x1b[0m \x1b[35m[WARNING]: site-v100: instance chat: field dtype: /srv/models/lab-chat is a\x1b[0m
   16.7   \x1b[35m│\x1b[0m \x1b[35m  bfloat16 checkpoint (torch_dtype in config.json), served as float16\x1b[0m
   16.7   \x1b[2m│\x1b[0m ok: [site-v100]
   58.3   \x1b[2m│\x1b[0m skipping: [site-v100]
   58.3   \x1b[35m│\x1b[0m \x1b[35m[WARNING]: Encountered 1 template error.\x1b[0m
   58.3   \x1b[2m│\x1b[0m error 1 - '__engine_llamacpp' is undefined
   58.3   \x1b[2m│\x1b[0m Origin:
   58.3   \x1b[2m│\x1b[0m   /work/main/roles/engine/tasks/plan.yml:102:13
   58.3   \x1b[2m│\x1b[0m
  119.7 INFO     site ➜ converge: Executed: Successful
  119.7 INFO     site ➜ idempotence: Executing
  123.2   \x1b[35m│\x1b[0m \x1b[35m[WARNING]: Could not match supplied host pattern, ignoring: volta_router\x1b[0m
  134.7 INFO     site ➜ side_effect: Executing
  140.0   \x1b[2m│\x1b[0m [WARNING]: a warning the side effect provokes on purpose
"""


def test_the_warnings_of_the_first_run_and_its_rerun_are_read_whole():
    assert runner.ansible_warnings(SITE) == [
        "site-v100: instance chat: field dtype: /srv/models/lab-chat is a bfloat16 checkpoint (torch_dtype in "
        "config.json), served as float16",
        "Encountered 1 template error. error 1 - '__engine_llamacpp' is undefined Origin: "
        "/work/main/roles/engine/tasks/plan.yml:102:13",
        "Could not match supplied host pattern, ignoring: volta_router",
    ]


def test_a_warning_that_is_not_a_real_one_of_the_scenario_fails_it_once_with_the_alarms_last(
        monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "TOP", tmp_path)
    monkeypatch.setattr(runner, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(runner.time, "sleep", lambda _: None)
    monkeypatch.setattr(runner, "run_logged", lambda argv, log: log.write_text(SITE) and 0)
    assert runner.main(["--lanes", "1", "--retries", "1", "site"]) == 1
    out = capsys.readouterr().out
    assert out.count("=== molecule test -s site") == 1
    why = out[out.index("=== why site failed"):].splitlines()[1:]
    assert why == [
        "false alarms: 2 warning(s) of converge and idempotence that are not real problems of the scenario's "
        "inventory (REAL_WARNINGS in tests/molecule/run):",
        "false alarm: Encountered 1 template error. error 1 - '__engine_llamacpp' is undefined Origin: "
        "/work/main/roles/engine/tasks/plan.yml:102:13",
        "false alarm: Could not match supplied host pattern, ignoring: volta_router",
    ]


def test_a_scenario_whose_warnings_are_all_real_passes(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(runner, "TOP", tmp_path)
    monkeypatch.setattr(runner, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(runner.time, "sleep", lambda _: None)
    real = "\n".join(row for row in SITE.splitlines() if "template" not in row and "volta_router" not in row)
    monkeypatch.setattr(runner, "run_logged", lambda argv, log: log.write_text(real) and 0)
    assert runner.main(["--lanes", "1", "site"]) == 0
    assert "    site                 passed" in capsys.readouterr().out
