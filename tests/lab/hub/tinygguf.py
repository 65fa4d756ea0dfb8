"""Write the lab's tiny GGUF model with the real ``gguf`` package (tests/lab/hub/gguf.txt pins it).

  tinygguf.py OUT.gguf

A llama-architecture model of two layers (n_embd 64, 4 heads, 2 KV heads, n_ff 128, context 2048)
with deterministic random weights and a byte-level BPE vocabulary ("gpt2" tokenizer: the 256 byte
tokens, a few merges, four control tokens) and a ChatML chat template, about 150 KB. llama.cpp's
``llama-server`` (the llama.cpp tree vendored in llama-cpp-python 0.3.36) loads it and answers
``/v1/chat/completions`` with real tokens: nonsense text, since the weights are random.

What llama.cpp requires, read from that tree (src/llama-model.cpp ``LLM_ARCH_LLAMA``, src/llama-vocab.cpp,
src/llama-arch.cpp): ``llama.context_length``, ``llama.embedding_length``, ``llama.block_count``,
``llama.feed_forward_length``, ``llama.attention.head_count`` (and ``head_count_kv``),
``llama.attention.layer_norm_rms_epsilon``; for a "gpt2" tokenizer ``tokenizer.ggml.tokens``,
``token_type`` and ``merges`` (a BPE vocabulary without merges is refused: "cannot find tokenizer
merges in model file"); tensors ``token_embd``, ``output_norm``, ``output`` and per block
``attn_norm``, ``attn_q``/``k``/``v``/``output``, ``ffn_norm``, ``ffn_gate``/``up``/``down``.

The output head only scores printable ASCII tokens (the other rows are zero): the greedy and the
sampled tokens are then printable text, never a control token or half of a UTF-8 sequence, so the
answer is never empty. The end-of-turn token scores zero too: an answer runs to max_tokens.
"""

from __future__ import annotations

import sys

import gguf
import numpy as np

SEED = 20261130
N_EMBD, N_HEAD, N_HEAD_KV, N_FF, N_LAYER, N_CTX = 64, 4, 2, 128, 2, 2048
CONTROL = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]  # ids 0-3: BOS, EOS, ChatML's turn markers
MERGES = ["Ġ t", "t h", "Ġ a", "i n", "e r", "o n", "r e", "a n", "e n", "Ġ s", "o r", "Ġ w"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def byte_symbols() -> list[str]:
    """GPT-2's byte-level alphabet: the symbol of each byte 0-255 (printable bytes stand for themselves)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    symbols, extra = {}, 0
    for byte in range(256):
        if byte in kept:
            symbols[byte] = chr(byte)
        else:
            symbols[byte] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def vocabulary() -> tuple[list[str], list[int], list[bool]]:
    """Tokens, their GGUF token types and whether the output head may pick them."""
    tokens = CONTROL + byte_symbols() + ["".join(m.split(" ")) for m in MERGES]
    types = [gguf.TokenType.CONTROL] * len(CONTROL) + [gguf.TokenType.NORMAL] * (len(tokens) - len(CONTROL))
    printable = set(byte_symbols()[32:127])  # space (as "Ġ") to "~"
    scored = [t in printable or i >= len(CONTROL) + 256 for i, t in enumerate(tokens)]
    return tokens, [int(t) for t in types], scored


def tensors(n_vocab: int, scored: list[bool]) -> dict[str, np.ndarray]:
    """Weights in numpy's order (rows first): GGUF stores them with the dimensions reversed."""
    rng = np.random.default_rng(SEED)

    def matrix(rows, cols, scale):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float16)

    head_dim = N_EMBD // N_HEAD
    out = {"token_embd.weight": matrix(n_vocab, N_EMBD, 1.0),
           "output_norm.weight": np.ones(N_EMBD, dtype=np.float32)}
    for i in range(N_LAYER):
        out.update({
            f"blk.{i}.attn_norm.weight": np.ones(N_EMBD, dtype=np.float32),
            f"blk.{i}.attn_q.weight": matrix(N_HEAD * head_dim, N_EMBD, 0.1),
            f"blk.{i}.attn_k.weight": matrix(N_HEAD_KV * head_dim, N_EMBD, 0.1),
            f"blk.{i}.attn_v.weight": matrix(N_HEAD_KV * head_dim, N_EMBD, 0.1),
            f"blk.{i}.attn_output.weight": matrix(N_EMBD, N_HEAD * head_dim, 0.1),
            f"blk.{i}.ffn_norm.weight": np.ones(N_EMBD, dtype=np.float32),
            f"blk.{i}.ffn_gate.weight": matrix(N_FF, N_EMBD, 0.1),
            f"blk.{i}.ffn_up.weight": matrix(N_FF, N_EMBD, 0.1),
            f"blk.{i}.ffn_down.weight": matrix(N_EMBD, N_FF, 0.1),
        })
    head = matrix(n_vocab, N_EMBD, 1.0)
    head[~np.array(scored)] = 0
    out["output.weight"] = head
    return out


def write(path: str) -> None:
    tokens, types, scored = vocabulary()
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("volta-lab tiny-llama GGUF")
    writer.add_context_length(N_CTX)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(N_EMBD // N_HEAD)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(3)
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, data in tensors(len(tokens), scored).items():
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n", 1)[0])
    write(sys.argv[1])
