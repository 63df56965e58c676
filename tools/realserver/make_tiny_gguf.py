#!/usr/bin/env python3
"""Write a tiny llama-architecture GGUF with random weights.

Copied from the team's shared realserver kit (shared/realserver/make_tiny_gguf.py), laid out
by ruff; the file it writes is byte for byte the same.

No downloads: everything comes from numpy's RNG (fixed seed, so the file is
reproducible) and the `gguf` package from PyPI.

Vocabulary (SPM / "llama" tokenizer, 356 tokens):
    0 <unk> (UNKNOWN)   1 <s> (CONTROL, BOS)   2 </s> (CONTROL, EOS)
    3..258   <0x00>..<0xFF>  (BYTE tokens: any byte sequence can be encoded)
    259      U+2581 "▁"       (SPM's word-boundary marker = a space)
    260..353 the printable ASCII characters "!".."~", one token each
    354 "<tool_call>\\n"  355 "</tool_call>"  (tool-call markers, see template)

The weights are random, so the text is gibberish.  Some per-token logit
offsets are built in, through a constant residual-stream dimension that no
layer writes to and that the output matrix reads, so that grammar-constrained
decoding terminates quickly and still makes arbitrary picks:
  * '"' is likely  -> JSON strings close after a few characters
  * '}' and ']' are likely, ',' unlikely -> objects/arrays close soon (and
    optional properties / extra array items are rare)
  * whitespace, '\\', '<' and raw byte tokens are unlikely
  * </s> (EOS) is unlikely in free text (so a small max_tokens ends with
    finish_reason "length"), but once a grammar is complete it only allows
    EOS or whitespace, so JSON replies end with "stop".
And two "bigram" preferences (dims flagging the current token):
  * after a newline (the generation prompt ends with one) "<tool_call>\\n"
    is very likely, so llama.cpp's own server, which lets free text precede a
    tool call, gets its tool call straight away when tool_choice="required";
  * after "</tool_call>", EOS is very likely.
Everything else gets random (context dependent) logits of order 1.

Usage: python make_tiny_gguf.py OUT.gguf [--seed N] [--layers 2] [--embd 64]
       [--heads 4] [--ff 128] [--ctx 8192]
"""

import argparse
import sys

import gguf
import numpy as np

# "<tool_call>" with its newline is one token: llama.cpp's server treats
# "<tool_call>" followed by anything else as plain content.
TOOL_OPEN, TOOL_CLOSE = "<tool_call>\n", "</tool_call>"

# A small Hermes/Qwen-style chat template.  llama-cpp-python renders it with
# jinja2 (ImmutableSandboxedEnvironment, trim_blocks on), llama.cpp's
# llama-server with its own jinja engine, which also analyses it to work out
# the tool-call syntax:  <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
# It must not fail on content=None (assistant tool-call turns), list content
# (content parts) or tool messages.  Newlines are {{ nl }} expressions: a
# literal newline right after a block tag would be eaten by trim_blocks.
CHAT_TEMPLATE = (
    "{% set nl = '\\n' %}"
    "{{ bos_token }}"
    "{% if tools %}<|system|>{{ nl }}"
    "Tools: {{ tools | tojson }}{{ nl }}"
    "To call a tool, reply with <tool_call>{{ nl }}"
    '{"name": <name>, "arguments": <arguments>}{{ nl }}</tool_call>{{ nl }}'
    "{% endif %}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ nl }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] is iterable and message['content'] is not mapping %}"
    "{% for part in message['content'] %}"
    "{% if part is mapping and part.get('type') == 'text' %}{{ part.get('text', '') }}{% endif %}"
    "{% endfor %}"
    "{% endif %}"
    "{% if message.get('tool_calls') %}"
    "{% for tc in message['tool_calls'] %}"
    "{% if message['content'] or not loop.first %}{{ nl }}{% endif %}"
    '<tool_call>{{ nl }}{"name": "{{ tc[\'function\'][\'name\'] }}", "arguments": '
    "{% if tc['function']['arguments'] is string %}{{ tc['function']['arguments'] }}"
    "{% else %}{{ tc['function']['arguments'] | tojson }}{% endif %}"
    "}{{ nl }}</tool_call>"
    "{% endfor %}"
    "{% endif %}"
    "{{ nl }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{{ nl }}{% endif %}"
)

# Logit offsets (in logits, before temperature).  See module docstring.
BIAS = {
    "eos": -4.0,
    "ws": -6.0,
    '"': 3.5,
    "}": 2.5,
    "]": 2.5,
    ",": -6.0,
    "\\": -3.0,
    "<": -6.0,
    TOOL_OPEN: -6.0,
    TOOL_CLOSE: -2.5,
    "byte": -8.0,
    "ctrl": -10.0,
}
NOISE_STD = 1.0  # std of the random part of the logits
# Tokens whose logit is just their offset (no random part): where the grammar
# offers "</tool_call>" or ',' (another parallel call), "</tool_call>" must
# win, and with greedy decoding (temperature 0) '"' must beat '}' and ']' so
# that strings stay short.
NO_NOISE = ["</s>", ",", "<", '"', "}", "]", TOOL_OPEN, TOOL_CLOSE]
# (previous token, next token, logit boost)
BIGRAMS = [("<0x0A>", TOOL_OPEN, 14.0), (TOOL_CLOSE, "</s>", 12.0)]
# Variance of the non-constant residual dims after the layers, relative to the
# embedding's (measured with llama.cpp on the default shape).
VAR_GROWTH = 7.8


def build_vocab():
    tokens, scores, types = [], [], []

    def add(text, ttype, score=0.0):
        tokens.append(text)
        scores.append(score)
        types.append(int(ttype))

    T = gguf.TokenType
    add("<unk>", T.UNKNOWN)
    add("<s>", T.CONTROL)
    add("</s>", T.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", T.BYTE)
    add("\u2581", T.NORMAL, -1.0)
    for c in range(0x21, 0x7F):
        add(chr(c), T.NORMAL, -1.0)
    add(TOOL_OPEN, T.NORMAL, -1.0)
    add(TOOL_CLOSE, T.NORMAL, -1.0)
    return tokens, scores, types


def token_bias(tokens, types):
    bias = np.zeros(len(tokens), dtype=np.float32)
    for i, (tok, ty) in enumerate(zip(tokens, types, strict=True)):
        if ty == gguf.TokenType.BYTE:
            b = int(tok[3:5], 16)
            bias[i] = BIAS["ws"] if b in (0x09, 0x0A, 0x0D, 0x20) else BIAS["byte"]
        elif ty in (gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL):
            bias[i] = BIAS["ctrl"]
        elif tok == "\u2581":
            bias[i] = BIAS["ws"]
        elif tok in BIAS:
            bias[i] = BIAS[tok]
    bias[tokens.index("</s>")] = BIAS["eos"]
    return bias


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=8192)
    a = ap.parse_args(argv)

    rng = np.random.default_rng(a.seed)
    n_embd, n_head, n_ff, n_layer = a.embd, a.heads, a.ff, a.layers
    head_dim = n_embd // n_head
    assert head_dim * n_head == n_embd
    assert head_dim % 2 == 0

    tokens, scores, types = build_vocab()
    n_vocab = len(tokens)
    tid = {t: i for i, t in enumerate(tokens)}
    bias = token_bias(tokens, types)
    n_fixed = 1 + len(BIGRAMS)  # residual dims that no layer writes to
    assert n_fixed < n_embd // 2

    f32 = np.float32
    # Dim 0 holds a constant C for every token; after the final RMSNorm it is
    # ~C/rms, and column 0 of output.weight turns it into per-token offsets.
    # Dims 1..len(BIGRAMS) flag "the current token is <prev>"; output.weight
    # reads each only for the token it promotes.
    C, sigma_e = 4.0, 0.5
    sigma_in, sigma_out = 0.3, 0.02  # layer input / output projections
    emb = rng.normal(0.0, sigma_e, (n_vocab, n_embd)).astype(f32)
    emb[:, 0] = C
    emb[:, 1:n_fixed] = 0.0
    for d, (prev, _, _) in enumerate(BIGRAMS, start=1):
        emb[tid[prev], d] = C

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("tiny-random-llama")
    w.add_description("random weights, for protocol tests only; output is gibberish")
    w.add_context_length(a.ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(tid["<s>"])
    w.add_eos_token_id(tid["</s>"])
    w.add_unk_token_id(tid["<unk>"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    w.add_tensor("token_embd.weight", emb)
    for i in range(n_layer):

        def rnd(sigma, *shape):
            return rng.normal(0.0, sigma, shape).astype(f32)

        wo = rnd(sigma_out, n_embd, n_embd)
        wo[:n_fixed, :] = 0.0
        wdown = rnd(sigma_out, n_embd, n_ff)
        wdown[:n_fixed, :] = 0.0
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=f32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rnd(sigma_in, n_embd, n_embd))
        w.add_tensor(f"blk.{i}.attn_k.weight", rnd(sigma_in, n_embd, n_embd))
        w.add_tensor(f"blk.{i}.attn_v.weight", rnd(sigma_in, n_embd, n_embd))
        w.add_tensor(f"blk.{i}.attn_output.weight", wo)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rnd(sigma_in, n_ff, n_embd))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rnd(sigma_in, n_ff, n_embd))
        w.add_tensor(f"blk.{i}.ffn_down.weight", wdown)

    # Final norm: estimate what the fixed dims normalise to, to scale offsets.
    var_other = sigma_e * sigma_e * VAR_GROWTH
    n_free = n_embd - n_fixed
    rms = np.sqrt((C * C + n_free * var_other) / n_embd)
    n0 = C / rms
    other = np.sqrt(var_other) / rms
    out = rng.normal(0.0, NOISE_STD / (other * np.sqrt(n_free)), (n_vocab, n_embd)).astype(f32)
    out[:, 1:n_fixed] = 0.0
    for t in NO_NOISE:
        out[tid[t], n_fixed:] = 0.0
    out[:, 0] = bias / n0
    # a flagged token has two large dims, so its rms is a bit larger
    n_flag = C / np.sqrt((2 * C * C + n_free * var_other) / n_embd)
    for d, (_, nxt, boost) in enumerate(BIGRAMS, start=1):
        out[tid[nxt], d] = boost / n_flag
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=f32))
    w.add_tensor("output.weight", out)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(
        f"wrote {a.out}: vocab {n_vocab}, {n_layer} layers, n_embd {n_embd}, "
        f"{n_head} heads, n_ff {n_ff}, ctx {a.ctx}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
