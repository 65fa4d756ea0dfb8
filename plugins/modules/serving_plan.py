#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This file only documents the action plugin of the same name (plugins/action/serving_plan.py),
# which runs on the controller and never connects to the host.

from __future__ import annotations

DOCUMENTATION = r"""
---
module: serving_plan
short_description: Check a V100 host's engine instances against the SM70 rules and build its serving plan
description:
  - Reads the host's O(server) (C(volta_server)) and O(instances) (C(volta_instances)), fills every
    instance from its engine's Volta profile, checks the result against the V100 (SM70) rules and
    returns the serving plan, one entry per instance with the exact argv and environment that the
    systemd unit will run.
  - Runs on the controller only and never connects to the host, so it works for hosts that cannot
    be reached yet.
  - Every option left out is read from the host's variables, the inventory names of volta.serving
    (C(volta_server), C(volta_instances), C(nvidia_driver_branch), C(nvidia_driver_kernel_module),
    C(cuda_toolkit_version), C(engine_vllm_version), C(engine_vllm_torch_version), C(engine_vllm_torch_cuda),
    the same three for C(engine_onecat_*), C(ansible_port), the names in C(api_gateway_keys),
    C(api_gateway_host_key), C(api_gateway_generate_keys), C(preflight_engine_profiles),
    C(preflight_reserved_ports), C(engine_build_packages), C(preflight_host_ram_need_gb),
    C(volta_engines_root), C(volta_secrets_dir), C(ansible_facts['volta_gpu']), C(engine_python),
    C(engine_onecat_python), C(engine_python_uv_version), C(engine_onecat_wheel_url)); the defaults below apply when
    those are unset too. So roles call it without options and build the same plan as preflight.
  - Where each option left out comes from (the variable, its owner role, the default) is declared once, in
    the plan's input schema C(plugins/plugin_utils/plan_inputs.yml) of the collection.
  - Built once per host per run. The report is kept in the host fact C(volta_serving_plan) with the sha256 of
    the resolved options, and a later call whose options resolve to the same values (the next layer of the
    same run, nothing changed in between) reuses it (RV(reused)). A layer run on its own builds it.
  - Fails, listing every error of the host, when any rule reports an error. Warnings, and findings
    allowed on purpose with their reasons, are printed as warnings.
  - The API key is never part of the plan's argv or environment. vLLM and 1Cat-vLLM read
    C(VLLM_API_KEY) from a root-only EnvironmentFile named in RV(plan.instances[].environment_file);
    llama.cpp gets C(--api-key-file) RV(plan.instances[].api_key_file).
  - 'Rules that rest on unverified reports (V(nvfp4-moe-tp), V(qwen-linear-pp)) can be allowed per instance
    with C(allow: [{rule: ID, reason: "..."}]); allowing any other rule is an error.'
author:
  - volta.serving contributors (!UNKNOWN)
options:
  server:
    description:
      - The machine (C(volta_server)) with C(gpu_model), C(gpu_count), C(compute_capability),
        C(nvlink_islands) and C(ram_gb).
      - Defaults to C(volta_server); a host without either fails with a finding.
    type: dict
  instances:
    description:
      - The engine instances (C(volta_instances)). Each needs C(name), C(engine) (V(vllm), V(onecat),
        V(llamacpp)), C(model), C(gpus) and C(port) and states only what differs from its engine's profile.
      - Other fields are C(enabled), C(served_model_name), C(model_family), C(quantization),
        C(tensor_parallel), C(pipeline_parallel), C(dtype), C(kv_cache_dtype), C(max_model_len),
        C(max_num_batched_tokens), C(max_num_seqs), C(gpu_memory_utilization), C(mtp),
        C(mtp_num_speculative_tokens), C(backend_port), C(service_port), C(extra_args), C(env) and C(allow).
      - Enabled instances with the same C(served_model_name) and C(service_port) are the replicas of one service
        (RV(plan.services)).
    type: list
    elements: dict
    default: []
  host:
    description: The host name used in the findings and the plan. Defaults to C(inventory_hostname).
    type: str
  driver_branch:
    description:
      - NVIDIA driver branch that will be installed (C(nvidia_driver_branch)).
      - Left out and unset, the default of role volta.serving.nvidia_driver (its C(defaults/main.yml), the one home of
        the pin).
    type: str
  driver_kernel_module:
    description: Which NVIDIA kernel modules will be installed (C(nvidia_driver_kernel_module)).
    type: str
    choices: [proprietary, open]
    default: proprietary
  cuda_version:
    description:
      - CUDA toolkit version that will be installed (C(cuda_toolkit_version)).
      - Left out and unset, the default of role volta.serving.cuda_toolkit.
    type: str
  engine_versions:
    description:
      - Per engine (V(vllm), V(onecat)) the engine C(version), C(torch_version) and C(torch_cuda) tag
        (for example V(cu126)), from the engine role's variables, else its defaults (the one home of the pins).
    type: dict
    default: {}
  ssh_port:
    description:
      - The port the firewall keeps open for SSH (C(firewall_ssh_port), else C(ansible_port)); no instance may use it.
    type: int
    default: 22
  api_key_instances:
    description:
      - Names of the instances that have a key in C(api_gateway_keys). Only the names are passed, never the keys.
    type: list
    elements: str
    default: []
  api_host_key:
    description: Whether a per-host key (C(api_gateway_host_key)) is configured.
    type: bool
    default: false
  api_generate_keys:
    description: Whether keys are generated on the host (C(api_gateway_generate_keys)).
    type: bool
    default: false
  profiles:
    description:
      - Per-engine changes to the Volta profiles (engine -> keys C(program), C(dtype), C(attention_backend),
        C(gpu_memory_utilization), C(max_num_batched_tokens), C(n_gpu_layers), C(flags), C(env)); a key given
        replaces the default.
    type: dict
    default: {}
  engines_root:
    description:
      - Where the engines are installed; an instance's engine runs from C(<engines_root>/<engine>/current).
      - Left out, C(engine_root), else the default of role volta.serving.engine (C(volta_engines_root), else its
        built-in path).
    type: str
  secrets_dir:
    description: Where the root-only key files and EnvironmentFiles of the instances live on the host.
    type: str
    default: /etc/volta/secrets
  reserved_ports:
    description: Other ports the host uses (port -> what), checked for collisions with the instances.
    type: dict
    default: {}
  build_packages:
    description: The engine build packages, when a role sets them; must include the Python headers for Triton.
    type: list
    elements: str
  ram_need_gb:
    description: Host RAM per instance by model family, in GB, on top of the built-in table.
    type: dict
    default: {}
  gpu_facts:
    description:
      - The C(volta_gpu) fact of M(volta.serving.gpu_facts). When its status is V(ok), C(server) is checked
        against it. Defaults to C(ansible_facts['volta_gpu']) when that is set.
    type: dict
  model_facts:
    description:
      - The C(volta_checkpoints) fact of M(volta.serving.model_facts). When given, every instance whose C(model) is
        a local path is checked against its checkpoint (the path exists, C(config.json) against
        C(tensor_parallel), C(max_model_len), C(dtype), C(quantization), C(model_family) and the engine, the
        weights' size against the GPUs), and C(model_family) left out of an instance is read from the
        checkpoint. Defaults to C(ansible_facts['volta_checkpoints']) when that is set.
    type: dict
  host_platform:
    description:
      - The host's platform as preflight read it, for the platform rules (V(glibc-too-old), and the automatic
        interpreter choice of V(python-unsupported)). Keys C(distribution) and C(version) (Ansible's
        C(distribution) and C(distribution_version)), C(glibc) (the output of C(getconf GNU_LIBC_VERSION) such as
        V(glibc 2.36), or null when it could not be read) and C(note) (what was not read, and why).
      - Left out, those rules do not run (engine_service and api_gateway leave it out); an empty C(glibc) turns
        the glibc rule into a V(platform-unchecked) warning.
    type: dict
  engine_pythons:
    description:
      - Per engine (V(vllm), V(onecat)) the interpreter set in the inventory (C(engine_python),
        C(engine_onecat_python)); empty is the automatic choice. A value the engine's Requires-Python excludes is
        an error (V(python-unsupported)).
    type: dict
  python_uv_version:
    description: The CPython uv installs where the distribution's Python is not supported (C(engine_python_uv_version)).
    type: str
  onecat_wheel:
    description:
      - The file name of the 1Cat-vLLM wheel (the basename of C(engine_onecat_wheel_url)); its C(cpXY) tag is the
        Python it needs. Empty takes the release's wheel name (C(cp312)).
    type: str
  gateway:
    description:
      - The api_gateway settings pasted into the nginx configuration, checked before anything is rendered
        (C(listen_address), C(client_max_body_size), C(metrics_allow), C(proxy_timeouts), C(unauthorized_rate),
        C(unauthorized_burst)), whether the TLS certificate and key are set (C(tls_certificate), C(tls_private_key),
        booleans), C(allow_plain_http), and the firewall's C(firewall_enabled) and C(api_cidrs) (plain HTTP to
        non-private networks is refused).
      - C(key_shapes) - where each API key is set (V(api_gateway_keys[<name>]), V(api_gateway_host_key)) -> the key
        with every character replaced by its class (V(a) for A-Z a-z 0-9 . _ ~ + / = -, a space for whitespace,
        V(?) for anything else), never the key. A key with whitespace or other characters, or shorter than 32, is
        an error (rule C(weak-api-key)).
      - Defaults to those of C(api_gateway_*) and C(firewall_*) in the host's variables.
    type: dict
  api_key_sha256:
    description:
      - Where each API key is set (V(api_gateway_keys[<name>]), V(api_gateway_host_key)) -> the sha256 of the key.
        A published example key (the example inventories') is an error unless O(lab) is true. Never the keys.
      - Defaults to the digests of C(api_gateway_keys) and C(api_gateway_host_key) in the host's variables.
    type: dict
  lab:
    description:
      - The inventory is a lab (C(volta_lab)); its published example keys are allowed.
    type: bool
  units:
    description:
      - What engine_service writes into every unit's restart policy, C(restart_sec), C(start_limit_interval) and
        C(start_limit_burst) (C(RestartSec=), C(StartLimitIntervalSec=), C(StartLimitBurst=)). A start limit that
        cannot trip (C(start_limit_burst) starts, C(restart_sec) apart, not within C(start_limit_interval)) is an
        error.
      - Defaults to C(engine_service_restart_sec), C(engine_service_start_limit_interval) and
        C(engine_service_start_limit_burst) in the host's variables (10, 600, 5).
    type: dict
  models:
    description:
      - Model sources by name (C(volta_models), role volta.serving.model). An instance with C(model_source) gets
        the source's served path as its C(model) (C(<models_root>/<name>@<revision>) for a Hugging Face commit,
        C(<models_root>/<name>@<sha256[:12]>/<file>) for a URL, the path for a path source).
      - Defaults to C(volta_models) when that is set.
    type: dict
  models_root:
    description:
      - Where the models live. Defaults to C(model_root), then C(volta_models_root), then V(/srv/volta/models).
    type: str
  report_warnings:
    description:
      - Print the warnings and allowed findings (Ansible's C(warnings)). Roles that rebuild the plan after
        preflight set V(false) so each warning is printed once per run; the counts are returned either way.
    type: bool
    default: true
  unknown_variables:
    description:
      - V(warn) makes unknown instance fields (and, with O(preflight), unknown variables) warnings; V(error) stops.
      - Left out, C(preflight_unknown_variables), else C(volta_unknown_variables), else V(error).
    type: str
  preflight:
    description:
      - The controller-side checks of preflight as well (volta.serving.preflight sets it), from the host's
        variables - every variable with a role's prefix that no role's argument spec lists (with the closest
        known name), C(nvidia_driver_version) against the branch, the form of the engine versions and, when the
        controller can read C(engine_pypi_index_url), vLLM's releases there (else a warning), the form of every
        C(*_sha256) pin and of the C(volta_models) pins (placeholders such as C(aaaa...) refused), and an empty
        C(firewall_api_cidrs) while instances are served with the firewall on.
    type: bool
    default: false
  index_timeout:
    description: Seconds to wait for the index when O(preflight) reads the releases of the pinned vLLM.
    type: int
    default: 10
  facts_from:
    description:
      - Where O(model_facts) were read. V(controller) - a local path that is not on the controller was not read
        (not missing), and a hub model the controller could not read is not an error; the summary lists the
        model rules that did not run and why.
    type: str
    choices: [host, controller]
    default: host
  dump_dir:
    description:
      - A directory on the controller; when set, the plan is also written to C(<dump_dir>/<host>.json)
        (even when there are errors).
    type: path
attributes:
  action:
    support: full
    description: An action plugin; all of the work happens on the controller.
  async:
    support: none
    description: Runs at once on the controller; there is nothing to wait for.
  check_mode:
    support: full
    description: The plugin only reads its arguments; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing on the host changes, so there is no diff.
  platform:
    support: full
    platforms: all
    description: Runs on the controller only; the host is never contacted.
notes:
  - Rule ids, severities and whether they can be allowed are listed in the role README of C(preflight).
seealso:
  - module: volta.serving.gpu_facts
  - module: volta.serving.model_facts
"""

EXAMPLES = r"""
- name: Build the plan of this host from its variables (what preflight, engine_service and api_gateway do)
  volta.serving.serving_plan:
    report_warnings: false
  register: serving

- name: Check the serving plan of every host, on the controller
  volta.serving.serving_plan:
    server: "{{ volta_server }}"
    instances: "{{ volta_instances | default([]) }}"
    driver_branch: "{{ nvidia_driver_branch }}"
    cuda_version: "{{ cuda_toolkit_version }}"
    engine_versions:
      vllm:
        version: "{{ engine_vllm_version }}"
        torch_version: "{{ engine_vllm_torch_version }}"
        torch_cuda: "{{ engine_vllm_torch_cuda }}"
    api_key_instances: "{{ api_gateway_keys | default({}) | dict2items | selectattr('value') | map(attribute='key') }}"
  register: serving

- name: Show the command line of each instance
  ansible.builtin.debug:
    msg: "{{ item.unit }}: {{ item.argv | join(' ') }}"
  loop: "{{ serving.plan.instances }}"
  loop_control:
    label: "{{ item.name }}"
"""

RETURN = r"""
reused:
  description: Whether the report was the one kept in C(volta_serving_plan) (built earlier from the same inputs).
  returned: always
  type: bool
  sample: true
ansible_facts:
  description: Set when the report was built (not reused) and has no errors.
  returned: when built without errors
  type: dict
  contains:
    volta_serving_plan:
      description: The sha256 of the inputs (C(inputs)) and the whole report (C(report)).
      type: dict
      returned: when built
plan:
  description: The serving plan of the host (on an error only C(msg) lists the errors, the plan is left out).
  returned: when there are no errors
  type: dict
  contains:
    host:
      description: The host.
      type: str
      returned: always
      sample: server-a
    gateway_ports:
      description: The public ports of the enabled instances (what the gateway listens on).
      type: list
      elements: int
      returned: always
      sample: [8001, 8002]
    unit_sandbox:
      description:
        - What every engine unit of the host may use, C(device_allow) (the NVIDIA device groups and nodes, for
          C(DeviceAllow=) under C(DevicePolicy=closed)) and C(address_families) (C(RestrictAddressFamilies=)).
      type: dict
      returned: always
      sample: {"device_allow": ["char-nvidia-frontend rw", "char-nvidia-uvm rw", "/dev/nvidiactl rw",
                                "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw", "/dev/nvidia0 rw"],
               "address_families": ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]}
    secrets_dir:
      description: The directory of the instances' key and environment files (C(volta_secrets_dir)).
      type: str
      returned: always
      sample: /etc/volta/secrets
    instances:
      description: One entry per instance that could be planned, in inventory order.
      type: list
      elements: dict
      returned: always
      contains:
        name:
          description: Instance name.
          type: str
          sample: command-r
        enabled:
          description: Whether the instance runs.
          type: bool
          sample: true
        engine:
          description: V(vllm), V(onecat) or V(llamacpp).
          type: str
          sample: vllm
        unit:
          description: The systemd unit.
          type: str
          sample: volta-command-r.service
        public_port:
          description: The port the gateway serves, with the API key.
          type: int
          sample: 8001
        backend_port:
          description: The engine's own port on loopback (public port + 10000 unless set).
          type: int
          sample: 18001
        service_port:
          description: The public port of the service this instance is a replica of, else null.
          type: int
          sample: 8000
        key_name:
          description:
            - The name of the instance's key in C(api_gateway_keys), that is the service's name (its
              C(served_model_name)) for a replica, else the instance's name.
          type: str
          sample: command-r
        key_owner:
          description:
            - The instance whose generated key (C(api_gateway_generate_keys)) this instance uses, that is the first
              replica of its service for a replica, else the instance itself.
          type: str
          sample: command-r
        rotation_file:
          description: A replica's upstream server line in its service's upstream (RV(plan.listeners)), else null.
          type: str
          sample: /etc/nginx/volta/rotation/8000-flash-next-a.conf
        drain:
          description:
            - Whether engine_service takes the instance out of its service's rotation and drains it before a restart
              (a replica of a service that has another replica).
          type: bool
          sample: false
        bind_host:
          description: The address the engine binds.
          type: str
          sample: 127.0.0.1
        cuda_visible_devices:
          description: C(CUDA_VISIBLE_DEVICES) of the instance.
          type: str
          sample: "0,1,2,3"
        argv:
          description: The exact command line, program first.
          type: list
          elements: str
          sample: ["/opt/volta/engines/vllm/current/venv/bin/vllm", "serve", "/srv/models/command-r-32b"]
        env:
          description: The environment of the unit (never the API key).
          type: dict
          sample: {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
        environment_file:
          description:
            - The root-only (root:root 0600) EnvironmentFile that holds C(VLLM_API_KEY) (vLLM engines) and the
              instance's C(secret_env); null for a llama.cpp instance without C(secret_env).
          type: str
          sample: /etc/volta/secrets/command-r.env
        secret_env_names:
          description: The names of the instance's C(secret_env) (written to RV(plan.instances[].environment_file));
            never the values.
          type: list
          elements: str
          sample: [HF_TOKEN]
        api_key_file:
          description: The root-only key file passed with C(--api-key-file) (llama.cpp), else null.
          type: str
          sample: null
        allowed:
          description: Rules allowed on purpose for this instance, with their reasons.
          type: list
          elements: dict
          sample: []
    services:
      description: One entry per service (enabled replicas that share C(served_model_name) and C(service_port)).
      type: list
      elements: dict
      returned: always
      sample: [{"name": "qwen3.8-flash-next", "port": 8000, "key_name": "qwen3.8-flash-next", "engine": "onecat",
                "health_path": "/health", "replicas": ["flash-next-a", "flash-next-b"]}]
    listeners:
      description:
        - What the gateway serves, one entry per public port in port order; C(kind) is V(instance) (one backend) or
          V(service) (every replica, each with the C(rotation_file) that holds its upstream server line).
      type: list
      elements: dict
      returned: always
      sample: [{"port": 8000, "name": "qwen3.8-flash-next", "kind": "service", "engine": "onecat",
                "served_model_name": "qwen3.8-flash-next", "key_name": "qwen3.8-flash-next",
                "key_instance": "flash-next-a", "health_path": "/health",
                "backends": [{"instance": "flash-next-a", "address": "127.0.0.1", "port": 18001,
                              "rotation_file": "/etc/nginx/volta/rotation/8000-flash-next-a.conf"}]}]
findings:
  description: Every finding, in order. C(severity) is V(error), V(warning) or V(allowed).
  returned: when there are no errors
  type: list
  elements: dict
  sample:
    - rule: bf16-on-sm70
      severity: error
      host: server-a
      instance: command-r
      field: dtype
      message: "server-a: instance command-r: field dtype: dtype bfloat16 on compute capability 7.0. Why: ... Fix: ..."
errors:
  description: Number of errors.
  returned: always
  type: int
  sample: 0
warning_count:
  description:
    - Number of warnings. The warnings themselves, and the allowed findings with their reasons, are printed
      (Ansible's own C(warnings) list), which is why the count has another name.
  returned: always
  type: int
  sample: 1
allowed_count:
  description: Number of findings allowed on purpose.
  returned: always
  type: int
  sample: 0
error_rules:
  description: The rule of each error, in the order of the list in C(msg) (the findings are left out on an error).
  returned: when there are errors
  type: list
  elements: str
  sample: [driver-version-branch, unknown-variable]
skipped_rules:
  description:
    - The rules that did not run for the host, and why (the model rules of an instance whose model was not read,
      C(gpu-facts-mismatch) without the GPUs read); C(msg) lists them too.
  returned: always
  type: list
  elements: str
  sample: ["gpu-facts-mismatch (volta_server against nvidia-smi): the GPUs were not read in this run"]
dump_file:
  description: The file the plan was written to, when O(dump_dir) is set.
  returned: when O(dump_dir) is set
  type: str
  sample: /tmp/plans/server-a.json
"""
