# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of the host's main variables, checked before anything reads inside them.

Pure Python, no Ansible imports. ``shape_problems(host, variables)`` returns one line per problem,
naming the host, the variable, what was expected and what was given:
``h1: volta_instances: expected a list of instances (mappings), got the string 'chat'. Fix: ...``.
Before, a wrong type reached Ansible's argument-spec check (a dump of the whole spec, no host) or a
filter deep inside a template ("dict2items requires a dictionary").

*variables* holds ``volta_server``, ``volta_instances``, ``api_gateway_keys`` and ``volta_models`` as the
inventory set them (None: not set). The values of ``api_gateway_keys`` are never described, only its type;
``volta_models`` is described down to its entries (a model's token is inside its hf: mapping, never shown).
"""

from __future__ import annotations

from collections.abc import Mapping

INSTANCE_FIELDS = "name, engine, model, gpus, port"
SERVER_FIELDS = "gpu_model, gpu_count, compute_capability, nvlink_islands, ram_gb"
MODEL_EXAMPLE = "volta_models: {qwen: {hf: {repo: Qwen/Qwen3-8B, revision: <40-hex commit>}}}"
SOURCE_EXAMPLES = ("{hf: {repo: ORG/NAME, revision: <40-hex commit>}}, {url: https://HOST/FILE.gguf, sha256: <64 hex>} "
                   "or {path: /srv/models/NAME}")


def jinja_int(value):
    """An integer as Jinja's ``int`` filter reads it: ``"7"`` and ``"7.9"`` give 7, anything else 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        pass
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def describe(value, secret=False):
    """What *value* is, in words: ``the string 'chat'``, ``a list of 2 items``, ``the number -1``."""
    if value is None:
        return "nothing (not set, or null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return "a number" if secret else f"the number {value!r}"
    if isinstance(value, str):
        if secret:
            return "a string"
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return f"a value of type {type(value).__name__}"


def _line(host, variable, expected, value, fix, secret=False):
    return f"{host}: {variable}: expected {expected}, got {describe(value, secret)}. Fix: {fix}"


def _is_count(value, least):
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _server_field_problems(host, server):
    problems = []
    if not isinstance(server.get("gpu_model"), str) or not server.get("gpu_model"):
        problems.append(_line(host, "volta_server.gpu_model", "the GPU model as nvidia-smi names it",
                              server.get("gpu_model"), "set it, e.g. gpu_model: Tesla V100-SXM2-32GB."))
    if not _is_count(server.get("gpu_count"), 1):
        problems.append(_line(host, "volta_server.gpu_count", "a whole number of GPUs, at least 1",
                              server.get("gpu_count"), "set it to the number of GPUs nvidia-smi lists."))
    if server.get("compute_capability") is None:  # null as well: every SM70 rule would be off
        problems.append(_line(host, "volta_server.compute_capability", 'a string such as "7.0"', None,
                              'set compute_capability: "7.0" for V100.'))
    ram = server.get("ram_gb")
    if ram is not None and (isinstance(ram, bool) or not isinstance(ram, (int, float)) or ram < 0):
        problems.append(_line(host, "volta_server.ram_gb", "the host memory in GB, a number of at least 0", ram,
                              "set it to the host's memory in GB (free -g), or leave it out."))
    islands = server.get("nvlink_islands", [])
    if islands is not None and not (isinstance(islands, list) and all(
        isinstance(i, list) and all(_is_count(g, 0) for g in i) for i in islands
    )):
        problems.append(_line(host, "volta_server.nvlink_islands", "a list of lists of GPU indexes", islands,
                              "write it as [[0, 1, 2, 3], [4, 5, 6, 7]], or [] for PCIe only."))
    return problems


def server_problems(host, server):
    """volta_server: a mapping with the machine's GPUs."""
    if not isinstance(server, Mapping):
        return [_line(host, "volta_server", f"a mapping ({SERVER_FIELDS})", server,
                      f"describe the machine in host_vars/{host}.yml, e.g. volta_server: "
                      "{gpu_model: Tesla V100-SXM2-32GB, gpu_count: 8, compute_capability: \"7.0\"}.")]
    return _server_field_problems(host, server)


def instances_problems(host, instances):
    """volta_instances: a list of mappings (None: not set, which is an empty list)."""
    if instances is None:
        return []
    if not isinstance(instances, (list, tuple)):
        return [_line(host, "volta_instances", f"a list of instances (mappings with {INSTANCE_FIELDS})", instances,
                      "write volta_instances as a YAML list, one '- name: ...' mapping per instance.")]
    return [
        _line(host, f"volta_instances[{index}]", f"an instance (a mapping with {INSTANCE_FIELDS})", item,
              f"write volta_instances[{index}] as a mapping, e.g. {{name: chat, engine: vllm, model: /srv/models/x, "
              "gpus: [0], port: 8001}.")
        for index, item in enumerate(instances)
        if not isinstance(item, Mapping)
    ]


def keys_problems(host, keys):
    """api_gateway_keys: a mapping of instance name -> key (None: not set). Values are never shown."""
    if keys is None or isinstance(keys, Mapping):
        return []
    return [_line(host, "api_gateway_keys", "a mapping of instance name -> API key", keys,
                  "write it as api_gateway_keys: {chat: !vault ...}, one entry per instance (in Ansible Vault).",
                  secret=True)]


def _models_fix(models):
    """The fix of a volta_models that is not a mapping; a YAML list of one-key mappings has its own words."""
    listed = isinstance(models, (list, tuple)) and models and all(isinstance(m, Mapping) for m in models)
    start = "write each model as a key of volta_models, without the '- ' of a list item" if listed else (
        "write volta_models as a mapping of model name -> source")
    return f"{start}: {MODEL_EXAMPLE}, and model_source: qwen in the instance that serves it."


def models_problems(host, models):
    """volta_models: a mapping of model name -> source (None: not set, no models)."""
    if models is None:
        return []
    if not isinstance(models, Mapping):
        return [_line(host, "volta_models", "a mapping of model name -> source (an instance names its model with "
                      "model_source: <name>; each source is hf:, url: or path:)", models, _models_fix(models))]
    problems = [
        _line(host, "volta_models", "model names that are strings", name,
              f"quote the name, e.g. \"{name}\": {{...}}, and use the same string as the instance's model_source.")
        for name in models if not isinstance(name, str)
    ]
    return problems + [
        _line(host, f"volta_models.{name}", "a source (a mapping with one of hf, url or path)", source,
              f"write volta_models.{name} as {SOURCE_EXAMPLES}.")
        for name, source in models.items() if isinstance(name, str) and not isinstance(source, Mapping)
    ]


def shape_problems(host, variables):
    """Every shape problem of volta_server, volta_instances, api_gateway_keys and volta_models in *variables*."""
    return (
        server_problems(host, variables.get("volta_server"))
        + instances_problems(host, variables.get("volta_instances"))
        + keys_problems(host, variables.get("api_gateway_keys"))
        + models_problems(host, variables.get("volta_models"))
    )
