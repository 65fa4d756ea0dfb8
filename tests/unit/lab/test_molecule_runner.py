"""tests/molecule/run: the lines it prints last to say why a scenario failed.

The log lines below are in the shape of this project's scenario logs (seconds since the start, molecule's
bar, Ansible 2.19's YAML callback), taken from a driver scenario log and shortened.
"""

import importlib.machinery
import importlib.util
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
