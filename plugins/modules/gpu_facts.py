#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPU, NVLink and driver facts from nvidia-smi
description:
  - Runs C(nvidia-smi --query-gpu=...) and C(nvidia-smi topo -m) and reads C(/proc/driver/nvidia/version),
    then returns the result as the C(volta_gpu) fact.
  - Also runs C(nvidia-smi -q -x) and lists the NVIDIA GPU functions in O(sysfs_root) for the
    RV(ansible_facts.volta_gpu.health) section (ECC errors, retired pages, PCIe link, throttling, GPUs in
    sysfs that nvidia-smi does not list). An C(nvidia-smi) that cannot print that report leaves health
    V(unknown) and every other key as it was.
  - Read-only; never changes the host.
  - A host without a working driver is not an error. The RV(ansible_facts.volta_gpu.status) key of the fact says
    why no GPU is listed (no driver loaded or C(nvidia-smi) missing, a loaded kernel module that does not
    match the user-space library, or a driver that finds no usable GPU).
  - Output that is none of the known formats fails the task, quoting the line that could not be read.
author:
  - volta.serving contributors (!UNKNOWN)
options:
  nvidia_smi:
    description:
      - The C(nvidia-smi) program, as a name looked up in E(PATH) (and the usual sbin directories)
        or as an absolute path.
      - When it cannot be found the fact reports RV(ansible_facts.volta_gpu.status=no_driver).
    type: str
    default: nvidia-smi
  proc_version_path:
    description:
      - The file that describes the loaded NVIDIA kernel module.
      - When it does not exist, RV(ansible_facts.volta_gpu.loaded_driver_version) and
        RV(ansible_facts.volta_gpu.kernel_module) are V(null).
    type: path
    default: /proc/driver/nvidia/version
  timeout:
    description:
      - Seconds each C(nvidia-smi) call may take. A call that takes longer (a hung driver) is stopped
        (coreutils C(timeout), then C(SIGKILL) 5 s later) and the fact reports
        RV(ansible_facts.volta_gpu.status=timeout) with the RV(ansible_facts.volta_gpu.command), so one hung
        host does not hang the whole run.
      - V(0) waits without a limit.
    type: int
    default: 30
  sysfs_root:
    description:
      - The sysfs mount whose C(bus/pci/devices) lists the PCI functions; an NVIDIA GPU function there that
        nvidia-smi does not list (a GPU fallen off the bus) is named in RV(ansible_facts.volta_gpu.health).
      - The test lab points it at its simulator's tree.
    type: path
    default: /sys
  pci_vendor:
    description:
      - Count the PCI functions of this vendor (V(0x10de), NVIDIA) in C(/sys/bus/pci/devices), returned as
        RV(pci_functions). A host with an NVIDIA PCI function but no driver answering has a GPU to drive.
      - Omitted, nothing is counted.
    type: str
  secure_boot:
    description: Read the Secure Boot state with C(mokutil --sb-state), returned as RV(secure_boot).
    type: bool
    default: false
  paths:
    description: Absolute paths to look at (a device node, a key file), returned in RV(paths) under the same names.
    type: list
    elements: str
    default: []
  glibc_command:
    description:
      - A command (argv) that prints the host's glibc version (V([getconf, GNU_LIBC_VERSION])), run read-only in the
        same call; its result is RV(glibc). Omitted, nothing is run.
    type: list
    elements: str
  known_health:
    description:
      - The RV(ansible_facts.volta_gpu.health) of an earlier read in the same run (a later role's read after
        preflight's). Returned as it is, without running C(nvidia-smi -q -x) again (several seconds on an
        8-GPU server) or reading sysfs, when its status is V(ok) and nvidia-smi lists the same GPUs (bus ids)
        as then; otherwise health is read again.
      - Omitted, health is read.
    type: dict
  connect_wait:
    description:
      - Seconds to wait for a host that does not answer (unreachable) before the read fails. The action plugin tries
        again every second, resetting the connection, until the host answers or the time is up; the read is then
        the check that the host answers, with no round trip of its own.
      - The failure after the wait has RV(unreachable_after) and a message that names the last connection error.
      - V(0) (the default) waits for nothing; an unreachable host is then unreachable, as for any module.
    type: int
    default: 0
attributes:
  action:
    support: full
    description: The action plugin of the same name runs the module, again while a host does not answer within
      O(connect_wait).
  check_mode:
    support: full
    description: The module only reads; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
  facts:
    support: full
    description: Returns the C(volta_gpu) fact under C(ansible_facts).
notes:
  - Compute capabilities are strings such as V(7.0); compare them with the C(version) test, not as strings.
seealso:
  - name: nvidia-smi documentation
    description: NVIDIA System Management Interface.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Gather GPU facts
  volta.serving.gpu_facts:

- name: Require the 580 driver to be loaded and usable
  ansible.builtin.assert:
    that:
      - ansible_facts['volta_gpu']['status'] == 'ok'
      - ansible_facts['volta_gpu']['driver_version'] is version('580', '>=')
      - ansible_facts['volta_gpu']['driver_version'] is version('590', '<')
    fail_msg: "{{ ansible_facts['volta_gpu']['message'] }}"

- name: Use an nvidia-smi that is not on PATH
  volta.serving.gpu_facts:
    nvidia_smi: /usr/local/bin/nvidia-smi

- name: Tensor-parallel groups must stay inside one NVLink island
  ansible.builtin.debug:
    msg: "{{ ansible_facts['volta_gpu']['nvlink_islands'] }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    volta_gpu:
      description: GPU, NVLink and driver facts. Every key is always present.
      returned: always
      type: dict
      contains:
        status:
          description:
            - V(ok) when nvidia-smi listed GPUs.
            - V(no_driver) when nvidia-smi is missing, its library is missing, or no kernel module is loaded.
            - V(driver_mismatch) when the loaded kernel module and the user-space library differ
              (typically after a driver upgrade, until reboot).
            - V(no_devices) when the driver runs but finds no usable GPU (for example a driver newer than
              the 580 branch, or the open kernel modules, on Volta GPUs).
            - V(timeout) when C(nvidia-smi) did not answer within O(timeout) seconds.
          type: str
          returned: always
          sample: ok
        command:
          description: The C(nvidia-smi) command that did not answer in time.
          type: list
          elements: str
          returned: when RV(ansible_facts.volta_gpu.status=timeout)
          sample: [nvidia-smi, topo, -m]
        message:
          description: One human-readable line about the status.
          type: str
          returned: always
          sample: 10 GPU(s) found
        gpu_count:
          description: Number of GPUs listed (0 unless RV(ansible_facts.volta_gpu.status=ok)).
          type: int
          returned: always
          sample: 10
        gpus:
          description: One entry per GPU, sorted by index.
          type: list
          elements: dict
          returned: always
          contains:
            index:
              description: nvidia-smi index.
              type: int
              sample: 0
            pci_bus_id:
              description: PCI bus id as nvidia-smi prints it.
              type: str
              sample: "00000000:18:00.0"
            name:
              description: Product name.
              type: str
              sample: Tesla V100-SXM2-32GB
            uuid:
              description: GPU UUID.
              type: str
              sample: GPU-00000000-0000-0000-0000-000000000000
            compute_capability:
              description: CUDA compute capability as C(<major>.<minor>).
              type: str
              sample: "7.0"
            memory_total_mib:
              description: Total memory in MiB.
              type: int
              sample: 32768
            driver_version:
              description: Driver version nvidia-smi reports for this GPU.
              type: str
              sample: 580.95.05
            persistence_mode:
              description: Whether persistence mode is enabled.
              type: bool
              sample: false
        nvlink_islands:
          description:
            - Groups of GPU indexes joined by NVLink (connected components of the C(NV#) links in
              C(nvidia-smi topo -m)), each of at least two GPUs, sorted.
          type: list
          elements: list
          returned: always
          sample: [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        pcie_only:
          description:
            - V(true) when no GPU has an NVLink to another.
            - V(null) unless RV(ansible_facts.volta_gpu.status=ok).
          type: bool
          returned: always
          sample: false
        driver_version:
          description:
            - User-space driver version nvidia-smi reports.
            - On RV(ansible_facts.volta_gpu.status=driver_mismatch), the NVML library version nvidia-smi
              prints (major.minor only).
            - V(null) when unknown.
          type: str
          returned: always
          sample: 580.95.05
        loaded_driver_version:
          description: Version of the loaded kernel module from O(proc_version_path); V(null) when none is loaded.
          type: str
          returned: always
          sample: 580.95.05
        kernel_module:
          description: V(open) or V(proprietary) kernel module flavour; V(null) when none is loaded.
          type: str
          returned: always
          sample: proprietary
        min_compute_capability:
          description: Lowest compute capability among the GPUs; V(null) when there are none.
          type: str
          returned: always
          sample: "7.0"
        health:
          description:
            - GPU health from C(nvidia-smi -q -x) and sysfs (parsed by C(plugins/module_utils/_gpu_health.py)).
            - A value nvidia-smi prints as N/A (or Not Supported) is V(null).
          type: dict
          returned: always
          contains:
            status:
              description: V(ok), or V(unknown) when not read (no GPU listed, or an nvidia-smi without the XML report).
              type: str
              sample: ok
            message:
              description: One line; why health is unknown, or how many GPUs and problems were read.
              type: str
              sample: 8 GPU(s) read, 0 problem(s)
            gpus:
              description:
                - One per GPU in nvidia-smi order, each with C(index), C(bus_id), C(pci_address) (sysfs form),
                  C(name), C(ecc) (C(mode), C(volatile) and C(aggregate) with C(corrected) and C(uncorrected)),
                  C(retired_pages) (C(single_bit), C(double_bit), C(pending)), C(remapped_rows) (V(null) on
                  Volta, which has none), C(pcie) (C(gen_current), C(gen_max), C(width_current), C(width_max)),
                  C(throttle) (the active reasons), C(temperature_c), C(power_draw_w), C(power_limit_w) and
                  C(failed).
              type: list
              elements: dict
            pci_functions:
              description:
                - The NVIDIA GPU functions in O(sysfs_root) (class 0x0300xx or 0x0302xx) bound to the C(nvidia)
                  driver or to none, as C(0000:1a:00.0); V(null) when unreadable.
              type: list
              elements: str
              sample: ["0000:1a:00.0", "0000:1b:00.0"]
            missing:
              description:
                - The functions of RV(ansible_facts.volta_gpu.health.pci_functions) that nvidia-smi does not list.
              type: list
              elements: str
              sample: []
            problems:
              description:
                - Each with C(kind) (V(ecc-uncorrectable), V(pending-retirement), V(missing), V(pcie-degraded),
                  V(throttled)), C(state) (V(failed) or V(degraded)), C(index), C(bus_id) and C(text).
              type: list
              elements: dict
pci_functions:
  description: The number of PCI functions of O(pci_vendor).
  type: int
  returned: when O(pci_vendor) is set
  sample: 10
secure_boot:
  description:
    - What C(mokutil --sb-state) printed (V(SecureBoot enabled), V(SecureBoot disabled), or that the system has no
      EFI variables), or V(not checked (mokutil is not installed)).
  type: str
  returned: when O(secure_boot=true)
  sample: SecureBoot disabled
paths:
  description: Per path of O(paths), C(exists) and C(ischr) (a character device).
  type: dict
  returned: always
  sample: {/dev/nvidia-uvm: {exists: true, ischr: true}}
glibc:
  description: C(rc), C(stdout) and C(stderr) of O(glibc_command) (C(rc) V(127) and the reason when it cannot run).
  type: dict
  returned: when O(glibc_command) is set
  sample: {rc: 0, stdout: "glibc 2.39\n", stderr: ""}
unreachable_after:
  description: The seconds the read waited for a host that did not answer within O(connect_wait) (the task fails).
  type: int
  returned: when the host did not answer within O(connect_wait)
  sample: 20
"""

import glob
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._gpu_facts import (
    QUERY_ARGS,
    TIMEOUT_RCS,
    TOPO_ARGS,
    GpuFactsError,
    build_facts,
    missing_binary_facts,
    needs_topology,
    timeout_facts,
)
from ansible_collections.volta.serving.plugins.module_utils._gpu_health import (
    XML_ARGS,
    build_health,
    reusable_health,
    sysfs_gpus,
    unknown_health,
)


class _TimedOut(Exception):
    """nvidia-smi did not answer in time; carries the command as it was asked for."""

    def __init__(self, command):
        super().__init__(command)
        self.command = command


def _find_nvidia_smi(module, name):
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    return module.get_bin_path(name, opt_dirs=["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"])


def _read_proc_version(module, path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        module.fail_json(msg=f"Cannot read {path}: {exc}")


def _run(module, binary, args):
    """Run nvidia-smi under timeout(1); on failure its message may be on either stream, so return both."""
    seconds = module.params["timeout"]
    limit = module.get_bin_path("timeout") if seconds > 0 else None
    prefix = [limit, "--kill-after=5", str(seconds)] if limit else []
    rc, out, err = module.run_command([*prefix, binary, *args], check_rc=False)
    if limit and rc in TIMEOUT_RCS:
        raise _TimedOut([binary, *args])
    if rc == 0:
        return rc, out
    return rc, "\n".join(part for part in (out, err) if part)


def _health(module, binary, facts):
    """The health section: nvidia-smi -q -x once GPUs were listed, and the GPU functions in sysfs."""
    if binary is not None and facts["status"] == "ok" and reusable_health(module.params["known_health"], facts["gpus"]):
        return module.params["known_health"]
    functions = sysfs_gpus(module.params["sysfs_root"])
    if binary is None or facts["status"] != "ok":
        return unknown_health(f"not read: {facts['message']}", functions)
    try:
        rc, out = _run(module, binary, XML_ARGS)
    except _TimedOut as exc:
        return unknown_health(f"{' '.join(exc.command)} did not answer within {module.params['timeout']} s", functions)
    return build_health(rc, out, facts["gpus"], functions)


def _pci_functions(vendor):
    count = 0
    for path in glob.glob("/sys/bus/pci/devices/*/vendor"):
        try:
            with open(path, encoding="ascii", errors="replace") as handle:
                count += handle.read().strip() == vendor
        except OSError:
            continue
    return count


def _secure_boot(module):
    mokutil = module.get_bin_path("mokutil", opt_dirs=["/usr/local/bin", "/usr/bin", "/usr/sbin", "/sbin"])
    if mokutil is None:
        return "not checked (mokutil is not installed)"
    _rc, out, err = module.run_command([mokutil, "--sb-state"], check_rc=False)
    return " ".join(line.strip() for line in (out + err).splitlines() if line.strip())


def _paths(paths):
    found = {}
    for path in paths:
        try:
            mode = os.stat(path).st_mode
            found[path] = {"exists": True, "ischr": stat.S_ISCHR(mode)}
        except OSError:
            found[path] = {"exists": False, "ischr": False}
    return found


def _glibc(module, argv):
    """rc, stdout and stderr of the glibc command; one that cannot run is rc 127 with the reason."""
    try:
        rc, out, err = module.run_command(argv, check_rc=False, handle_exceptions=False)
    except OSError as exc:
        rc, out, err = 127, "", f"{argv[0]}: {exc.strerror}"
    return {"rc": rc, "stdout": out, "stderr": err}


def _host_reads(module):
    """The optional reads beside the fact: PCI functions, Secure Boot, paths, glibc."""
    p, reads = module.params, {"paths": _paths(module.params["paths"])}
    if p["glibc_command"]:
        reads["glibc"] = _glibc(module, p["glibc_command"])
    if p["pci_vendor"]:
        reads["pci_functions"] = _pci_functions(p["pci_vendor"])
    if p["secure_boot"]:
        reads["secure_boot"] = _secure_boot(module)
    return reads


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            proc_version_path=dict(type="path", default="/proc/driver/nvidia/version"),
            sysfs_root=dict(type="path", default="/sys"),
            timeout=dict(type="int", default=30),
            pci_vendor=dict(type="str"),
            secure_boot=dict(type="bool", default=False),
            paths=dict(type="list", elements="str", default=[]),
            glibc_command=dict(type="list", elements="str"),
            known_health=dict(type="dict"),
            # Used by the action plugin (plugins/action/gpu_facts.py), which never passes it on.
            connect_wait=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    if module.params["timeout"] < 0:
        module.fail_json(msg=f"timeout {module.params['timeout']} is negative: give seconds, or 0 for no limit.")
    proc_text = _read_proc_version(module, module.params["proc_version_path"])
    binary = _find_nvidia_smi(module, module.params["nvidia_smi"])
    try:
        if binary is None:
            facts = missing_binary_facts(f"{module.params['nvidia_smi']} was not found", proc_text)
        else:
            query_rc, query_out = _run(module, binary, QUERY_ARGS)
            topo_rc, topo_out = None, None
            if needs_topology(query_rc, query_out):
                topo_rc, topo_out = _run(module, binary, TOPO_ARGS)
            facts = build_facts(query_rc, query_out, topo_rc, topo_out, proc_text)
    except _TimedOut as exc:
        facts = timeout_facts(exc.command, module.params["timeout"], proc_text)
    except GpuFactsError as exc:
        module.fail_json(msg=str(exc))
    facts["health"] = _health(module, binary, facts)
    module.exit_json(changed=False, ansible_facts={"volta_gpu": facts}, **_host_reads(module))


if __name__ == "__main__":
    main()
