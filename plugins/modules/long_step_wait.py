#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the action plugin of the same name (plugins/action/long_step_wait.py).

from __future__ import annotations

DOCUMENTATION = r"""
---
module: long_step_wait
short_description: Wait for a long step started with async, and show its progress while it runs
description:
  - Polls the async job O(jid) on the host every O(interval) seconds (as M(ansible.builtin.async_status) does)
    until it finishes, and every O(report_every) seconds prints one line on the controller's console with the
    host, the step, the time elapsed and the last line of the step's log O(log).
  - Returns the job's result (C(rc), C(finished), ...) like M(ansible.builtin.async_status), plus C(elapsed).
  - Used by the role volta.serving.engine for its long steps (torch and engine installs, the vLLM build,
    the llama.cpp build).
version_added: 0.1.0
author:
  - volta.serving contributors (!UNKNOWN)
options:
  jid:
    description: The async job id (C(ansible_job_id) of the task that started the step with C(poll=0)).
    type: str
    required: true
  log:
    description:
      - The step's log on the host; its last line is shown with the progress.
      - Empty for a step that writes no log (a module run with async, such as a download by
        M(ansible.builtin.get_url)); the progress line then gives the time elapsed only.
    type: str
    default: ""
  step:
    description: The step's name, shown in each progress line and in a time-out message.
    type: str
    required: true
  timeout:
    description: Seconds to wait at most; then the task fails saying so.
    type: int
    default: 3600
  interval:
    description: Seconds between two polls of the job.
    type: float
    default: 2.0
  report_every:
    description: Seconds between two progress lines.
    type: float
    default: 30.0
  space_path:
    description:
      - The directory the step writes into. When the step fails and its log shows a full disk (C(No space left on
        device)), RV(problem) gives the bytes written there, the bytes free on its filesystem and the fix.
    type: str
    default: ""
  index_urls:
    description:
      - The package indexes the step uses. When the step fails and its log shows one could not be reached
        (connection refused, DNS, time-out), RV(problem) names it and gives the fix.
    type: list
    elements: str
    default: []
  finish:
    description:
      - Also end the step as its caller would. The job's status file on the host is removed (as
        M(ansible.builtin.async_status) with C(mode=cleanup) does), and a step that did not end with exit status 0
        fails the task with RV(problem) first, then the step, its exit status (or why it has none) and the last
        40 lines of O(log).
      - Without it the task never fails on the step's exit status; the caller reads RV(rc) and RV(problem).
    type: bool
    default: false
attributes:
  action:
    support: full
    description: An action plugin; it polls the host through the connection and prints on the controller.
  async:
    support: none
    description: It is the waiting side of an async step.
  check_mode:
    support: none
    description: An async step does not run in check mode, so there is nothing to wait for.
  diff_mode:
    support: none
    description: Nothing changes.
  platform:
    support: full
    platforms: posix
    description: Any POSIX host (the log is read with C(tail)).
seealso:
  - module: ansible.builtin.async_status
"""

EXAMPLES = r"""
- name: Start the build
  ansible.builtin.command:
    argv: [sh, -c, 'exec make -j8 >/var/log/build.log 2>&1']
  async: 7200
  poll: 0
  register: build_job

- name: Wait for the build, showing its progress every 30 s
  volta.serving.long_step_wait:
    jid: "{{ build_job.ansible_job_id }}"
    log: /var/log/build.log
    step: build
    timeout: 7200
  register: build_result
"""

RETURN = r"""
finished:
  description: Whether the job finished (false only when the wait timed out).
  returned: always
  type: bool
  sample: true
rc:
  description: The step's exit status.
  returned: when the job finished
  type: int
  sample: 0
elapsed:
  description: Seconds waited.
  returned: always
  type: float
  sample: 754.2
problem:
  description:
    - For a step that exited non-zero, what its log shows in words an operator acts on (a full disk with both numbers,
      an unreachable index with its URL, each with the fix); empty when the log shows neither.
  returned: when the job finished with a non-zero exit status
  type: str
  sample: >-
    gpu-01: the package index http://pypi.internal/simple could not be reached during 'install torch 2.11.0 (cu126)'
    (Caused by: tcp connect error: Connection refused (os error 111)); fix: make http://pypi.internal/simple
    answer from gpu-01 (the index server, DNS, proxy, firewall), then rerun: the unfinished install is removed and
    made again.
step:
  description: The step's name.
  returned: always
  type: str
  sample: build vllm-0.21.0-torch2.11.0-cu126-cuda12.6-sm70-cp312 from source
"""
