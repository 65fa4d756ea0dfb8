# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_service's plan step (volta.serving.serving_plan with report_warnings: false, every input from the
host's variables) refuses an instance on a GPU that the gpu_facts health section marks failed, before any
task changes the host: the action never touches the connection."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible_collections.volta.serving.plugins.action.serving_plan import ActionModule

SERVER = {"gpu_model": "Tesla V100-PCIE-32GB", "gpu_count": 4, "compute_capability": "7.0", "nvlink_islands": [],
          "ram_gb": 251}
CHAT = {"name": "chat", "engine": "vllm", "model": "/srv/models/command-r-32b", "gpus": [0, 1], "tensor_parallel": 2,
        "port": 8001}
OTHER = {**CHAT, "name": "other", "gpus": [2, 3], "port": 8002}
BUS = ["00000000:1A:00.0", "00000000:1B:00.0", "00000000:3D:00.0", "00000000:3E:00.0"]


class NoConnection:
    def __init__(self):
        self._shell = SimpleNamespace(tmpdir=None)

    def __getattr__(self, name):
        raise AssertionError(f"serving_plan touched the connection: {name}")


def facts(problems, gpu_count=4):
    gpus = [{"index": i, "pci_bus_id": BUS[i], "name": SERVER["gpu_model"], "compute_capability": "7.0"}
            for i in range(gpu_count)]
    return {"status": "ok", "gpu_count": gpu_count, "gpus": gpus, "nvlink_islands": [], "pcie_only": True,
            "min_compute_capability": "7.0", "driver_version": "580.95.05", "kernel_module": "proprietary",
            "health": {"status": "ok", "message": "", "gpus": [],
                       "pci_functions": ["0000:1a:00.0", "0000:1b:00.0", "0000:3d:00.0", "0000:3e:00.0"],
                       "missing": [], "problems": problems}}


def run_plan(volta_gpu):
    task = SimpleNamespace(args={"report_warnings": False}, async_val=0, check_mode=False,
                           action="volta.serving.serving_plan")
    action = ActionModule(task, NoConnection(), play_context=None, loader=None, templar=Templar(loader=DataLoader()))
    task_vars = {"inventory_hostname": "server-b", "volta_server": SERVER, "volta_instances": [CHAT, OTHER],
                 "api_gateway_generate_keys": True, "ansible_facts": {"volta_gpu": volta_gpu}}
    return action.run(task_vars=task_vars)


def test_healthy_gpus_plan_both_instances():
    result = run_plan(facts([]))
    assert not result.get("failed"), result.get("msg")
    assert [i["name"] for i in result["plan"]["instances"]] == ["chat", "other"]


@pytest.mark.parametrize(
    ("kind", "text"),
    [("ecc-uncorrectable", "GPU 1 (00000000:1B:00.0): 2 uncorrectable ECC error(s) since the driver loaded"),
     ("pending-retirement", "GPU 1 (00000000:1B:00.0): memory pages wait for retirement")],
)
def test_instance_on_failed_gpu_is_refused_before_any_change(kind, text):
    problem = {"kind": kind, "state": "failed", "index": 1, "bus_id": BUS[1], "text": text}
    result = run_plan(facts([problem]))
    assert result["failed"] is True
    assert "instance-on-failed-gpu" in result["error_rules"]
    assert f"server-b: instance chat: field gpus: refusing to start instance chat on GPU 1: {text}" in result["msg"]
    assert "instance other" not in result["msg"]
    assert "plan" not in result


def test_instance_on_lost_gpu_is_refused():
    lost = facts([], gpu_count=3)
    lost["gpus"] = [g for g in lost["gpus"] if g["index"] != 2]
    lost["health"]["missing"] = ["0000:3d:00.0"]
    result = run_plan(lost)
    assert result["failed"] is True
    assert ("refusing to start instance other on GPU 2: GPU 2 (0000:3d:00.0) is not listed by nvidia-smi"
            in result["msg"])
    assert "gpu-missing" in result["error_rules"]
