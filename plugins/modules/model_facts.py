#!/usr/bin/python
# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_facts
short_description: Read what each local model path holds (config.json, weights' size, GGUF architecture)
description:
  - For every model path given, reports whether it exists, its parsed C(config.json), the total size of
    its weights and, for a GGUF file, the architecture named in its header, as the C(volta_checkpoints) fact.
  - The weights' size is C(metadata.total_size) of C(model.safetensors.index.json) (or
    C(pytorch_model.bin.index.json)) when the checkpoint has one, else the sum of the sizes of its
    C(*.safetensors), C(*.bin), C(*.pt), C(*.pth) and C(*.gguf) files. A C(.gguf) path is one file, or the
    first part of a split GGUF (C(name-00001-of-00003.gguf)), whose parts are summed.
  - Read-only; never changes the host. A path that does not exist is a fact, not a failure.
  - A model that is not an absolute path (a Hugging Face id such as C(Qwen/Qwen3-8B)) is not looked up;
    its entry says RV(ansible_facts.volta_checkpoints.local=false).
  - A model the model layer has not downloaded yet (an entry of O(hub) whose path is not on the host) is read
    from the hub instead, over HTTP(S) from the host, before anything is downloaded - the model's file list and
    sizes (C(/api/models/REPO/revision/REV?blobs=true)) and its small JSON files (C(config.json),
    C(tokenizer_config.json), the safetensors index) - so that preflight checks it before any change.
author:
  - volta.serving contributors (!UNKNOWN)
options:
  models:
    description: The model paths to read (the C(model) of each instance); repeated paths are read once.
    type: list
    elements: str
    required: true
  hub:
    description:
      - Hugging Face sources of the instances (the C(hf) models of C(volta_models) they use), each read from the
        hub when its O(hub[].path) is not on the host. Their paths are read like O(models) otherwise.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Where the model layer puts the model (C(MODEL_ROOT/NAME@REVISION)); the fact's key.
        type: str
        required: true
      endpoint:
        description: The hub or its mirror (C(model_hf_endpoint)).
        type: str
        required: true
      repo:
        description: The repository, C(ORG/NAME).
        type: str
        required: true
      revision:
        description: The commit (or, with C(model_allow_branch), a branch).
        type: str
        required: true
      allow_patterns:
        description: The source's C(allow_patterns); only the files they select are counted and read.
        type: list
        elements: str
        default: []
      token:
        description: The source's hub token, sent as C(Authorization Bearer); never returned.
        type: str
        default: ""
  pending:
    description:
      - Paths the model layer downloads later in the run (URL sources, one file each); one that is not on the
        host yet is reported with RV(ansible_facts.volta_checkpoints.pending=true), not as missing.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds each request to the hub may take.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
  facts:
    support: full
    description: Returns the C(volta_checkpoints) fact under C(ansible_facts).
seealso:
  - module: volta.serving.serving_plan
"""

EXAMPLES = r"""
- name: Read the models of the host's instances
  volta.serving.model_facts:
    models: "{{ volta_instances | map(attribute='model', default='') | list }}"

- name: Read a hub model before the model layer downloads it
  volta.serving.model_facts:
    models: []
    hub:
      - path: /srv/volta/models/qwen@0123456789abcdef0123456789abcdef01234567
        endpoint: https://huggingface.co
        repo: Qwen/Qwen2.5-72B-Instruct
        revision: 0123456789abcdef0123456789abcdef01234567
        allow_patterns: ["*.json", "*.safetensors"]

- name: Stop when a model is not there
  ansible.builtin.assert:
    that: ansible_facts['volta_checkpoints']['/srv/models/qwen2.5-72b-instruct']['exists']
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    volta_checkpoints:
      description: One entry per distinct model path, keyed by the path. Every key is always present.
      returned: always
      type: dict
      contains:
        path:
          description: The path as given.
          type: str
          sample: /srv/models/qwen2.5-72b-instruct
        local:
          description: V(true) for an absolute path (looked up); V(false) for anything else (a hub id).
          type: bool
          sample: true
        exists:
          description: Whether the path exists on the host.
          type: bool
          sample: true
        kind:
          description: V(directory), V(file), V(other), or V(null) when it does not exist or is not local.
          type: str
          sample: directory
        config:
          description: The parsed C(config.json) of a directory; V(null) when missing or unreadable.
          type: dict
          sample: {"architectures": ["Qwen2ForCausalLM"], "num_attention_heads": 64}
        config_error:
          description: Why C(config.json) could not be read (missing, not JSON, too large); V(null) when read.
          type: str
          sample: config.json is missing
        tokenizer_max_length:
          description: C(model_max_length) of C(tokenizer_config.json) when it is an integer, else V(null).
          type: int
          sample: 131072
        weights_bytes:
          description: Total size of the weights in bytes; V(null) when none were found.
          type: int
          sample: 145412407296
        weights_from:
          description:
            - Where RV(ansible_facts.volta_checkpoints.weights_bytes) comes from, the index file's name,
              V(files) (the sum of the weight files), V(gguf) or V(file); V(null) when none.
          type: str
          sample: model.safetensors.index.json
        weight_files:
          description: Number of weight files found.
          type: int
          sample: 37
        gguf_architecture:
          description: C(general.architecture) of the GGUF header (for example V(deepseek2)); V(null) if none.
          type: str
          sample: deepseek2
        gguf_error:
          description: Why the GGUF header could not be read; V(null) when read or not a GGUF.
          type: str
          sample: not a GGUF file (no GGUF magic)
        read_from:
          description: V(host) (read on the host), V(hub) (read from the hub before download), V(null) (not read).
          type: str
          sample: hub
        hub_error:
          description: Why the hub's metadata could not be read (the token never appears); V(null) otherwise.
          type: str
          sample: "Org/Model@0123456789ab: HTTP 401 Invalid credentials in Authorization header"
        pending:
          description: V(true) for a path of O(pending) that is not on the host yet (not checked this run).
          type: bool
          sample: false
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._model_hub import gather

HUB_SPEC = dict(
    path=dict(type="str", required=True),
    endpoint=dict(type="str", required=True),
    repo=dict(type="str", required=True),
    revision=dict(type="str", required=True),
    allow_patterns=dict(type="list", elements="str", default=[]),
    token=dict(type="str", default="", no_log=True),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            models=dict(type="list", elements="str", required=True),
            hub=dict(type="list", elements="dict", default=[], options=HUB_SPEC),
            pending=dict(type="list", elements="str", default=[]),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    facts = gather(params["models"], params["hub"], params["timeout"], pending=params["pending"])
    module.exit_json(changed=False, ansible_facts={"volta_checkpoints": facts})


if __name__ == "__main__":
    main()
