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
author:
  - volta.serving contributors (!UNKNOWN)
options:
  models:
    description: The model paths to read (the C(model) of each instance); repeated paths are read once.
    type: list
    elements: str
    required: true
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
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.volta.serving.plugins.module_utils._model_facts import gather


def main():
    module = AnsibleModule(
        argument_spec=dict(models=dict(type="list", elements="str", required=True)),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, ansible_facts={"volta_checkpoints": gather(module.params["models"])})


if __name__ == "__main__":
    main()
