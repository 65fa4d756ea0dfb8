# Copyright: (c) 2026, volta.serving contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""API keys published with this repository, refused on any inventory that is not a lab.

Pure Python, no Ansible imports. The example inventories ship keys anyone can read:
``inventories/lab`` encrypts its keys with the published example Vault password, and
``inventories/sim`` keeps its test keys in clear. Only their sha256 digests are recorded here
(never the keys); tests/unit/plugins/plugin_utils/test_example_keys.py checks that the list is
the digests of the keys the inventories hold. The serving_plan action passes the digest of each
configured key, never the key.
"""

from __future__ import annotations

from ansible_collections.volta.serving.plugins.plugin_utils._findings import finding

# sha256 of the UTF-8 key -> where it is published.
EXAMPLE_KEY_SHA256 = {
    "2d381dd524ef2e49cb3bfec7ccf0fdca687e41d9250b87c29c200a6d8fd16d53": "inventories/lab (qwen72b)",
    "9a99647b8603bb757327ae3d48f939ffba418a0829b28500b1d6fe1be855860d": "inventories/lab (command-r)",
    "5c70c10b4987af8b34bfb8277ff319c50b877ee857a152aea2f85f79b8510dd9": "inventories/lab (deepseek-lite)",
    "be0cb053a780c51ba24927109786340d0c817d00003ef6e2def03d2196b09543": "inventories/lab (qwen3.8-flash-next)",
    "cecbf42909f4f777ba90c58ad16b17b1189bf98f3fb5a752011fe65c75bba88d": "inventories/sim (qwen72b)",
    "29bb5356595b3438263cca88d280dd660cea9bae1355b679f45390ef05137ad7": "inventories/sim (command-r)",
    "e66fcfa4b8b2e2726b032ffd1898db315bb200d8e3884e08b6bbecb4e038da5d": "inventories/sim (deepseek-lite)",
    "83bb88a4a3f9b44ef831ba908f00addaf6dafbc8dd4eb6fce3f63ab555773d8b": "inventories/sim (qwen3.8-flash-next)",
}


def check_example_keys(host, key_sha256, lab):
    """Errors for configured keys that are published examples, unless the inventory is a lab.

    *key_sha256*: where a key is set (``api_gateway_keys[<name>]`` or ``api_gateway_host_key``) ->
    the sha256 of the key. *lab*: the inventory's ``volta_lab``.
    """
    if lab or not isinstance(key_sha256, dict):
        return []
    return [
        finding(
            "example-key",
            host,
            None,
            where,
            f"{where} is a published example key (from {EXAMPLE_KEY_SHA256[digest]}).",
            "the example inventories' keys can be read by anyone (the lab Vault password is published); a "
            "gateway with one of them is open to everyone.",
            "set api_gateway_generate_keys: true and remove the key (a new one is made on the host), or put a "
            "key of your own in Ansible Vault (openssl rand -hex 32); volta_lab: true marks a lab inventory.",
        )
        for where, digest in sorted(key_sha256.items())
        if isinstance(digest, str) and digest.lower() in EXAMPLE_KEY_SHA256
    ]
