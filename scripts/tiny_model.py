#!/usr/bin/env python3
"""Writes a tiny random-weight model (GGUF) that llama-server loads and samples from.

No weights can be downloaded, and none are needed: grammar-constrained sampling from random weights
is a fuzzer of the grammar, since whatever comes out is what the grammar allows. The vocabulary and
its tokenizer come from a vocab-only GGUF and the chat template from a real model's template, both
vendored by the llama-cpp-python sdist.

    tiny_model.py VOCAB.gguf TEMPLATE.jinja OUT.gguf [--seed N]

Architecture qwen2: 1 layer, 64 wide, 4 heads (2 KV heads), f32, fixed seed (same bytes every run).
`cached(version, template)` is the same for the tests and `make demo LLAMA=local`: the model for a chat
template, written once from that sdist's files (needs gguf and numpy only when it writes).
"""
import argparse, hashlib, os, subprocess, tarfile, tempfile

CACHE = os.environ.get("TOOLFIT_CACHE", os.path.expanduser("~/.cache/toolfit"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# chat template name: (vocabulary, template file), both under the sdist's vendor/llama.cpp/models/
TEMPLATES = {
    "qwen2.5": ("ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja"),
    "llama3.1": ("ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
}

N_EMBD, N_FF, N_HEAD, N_HEAD_KV, N_CTX = 64, 128, 4, 2, 32768
# the constant residual component the output bias reads, and the characters of whitespace-only tokens
# (byte-level BPE spells space, newline, tab and carriage return as these)
BIAS_DIM = 8.0
WHITESPACE = " \n\t\rĠĊĉč"
# end-of-turn tokens of the vocabularies used (qwen2, llama-bpe): favoured, so a turn ends as soon as the
# grammar allows it instead of going on to a second tool call
END_TOKENS = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}


def cached(version, template):
    """The model file for llama-cpp-python `version`'s vocabulary and `template`; the name carries a hash
    of this writer, so a changed writer makes a new model. The sdist is the one scripts/llama_server.sh keeps."""
    vocab, jinja = TEMPLATES[template]
    me = os.path.abspath(__file__)
    tag = hashlib.sha256(open(me, "rb").read()).hexdigest()[:12]
    out_dir = os.path.join(CACHE, "models")
    out = os.path.join(out_dir, f"tiny-{template}-{version}-{tag}.gguf")
    if os.path.exists(out):
        return out
    os.makedirs(out_dir, exist_ok=True)
    pkg = f"llama_cpp_python-{version}"
    tmp = tempfile.mkdtemp(prefix="toolfit-model-")
    with tarfile.open(os.path.join(CACHE, "server", f"{pkg}.tar.gz")) as t:
        for name in (f"{pkg}/vendor/llama.cpp/models/{vocab}", f"{pkg}/vendor/llama.cpp/models/templates/{jinja}"):
            t.extract(name, tmp)
    base = os.path.join(tmp, pkg, "vendor", "llama.cpp", "models")
    venv = subprocess.run([os.path.join(ROOT, "scripts", "venv.sh")], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([os.path.join(venv, "bin", "python"), me, os.path.join(base, vocab), os.path.join(base, "templates", jinja), out + ".tmp"], check=True)
    os.replace(out + ".tmp", out)
    return out


def main():
    import gguf
    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("vocab")
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    reader = gguf.GGUFReader(a.vocab)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    n_vocab = len(tokens)
    w = gguf.GGUFWriter(a.out, "qwen2")
    w.add_name("toolfit-tiny")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(1)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1_000_000.0)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # the tokenizer as the vocab file has it; the chat template from the given file
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer.") or name == "tokenizer.chat_template":
            continue
        sub = field.types[1] if len(field.types) > 1 else None
        w.add_key_value(name, field.contents(), field.types[0], sub)
    w.add_chat_template(open(a.template, encoding="utf-8").read())
    rng = np.random.default_rng(a.seed)

    def t(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    kv = N_EMBD // N_HEAD * N_HEAD_KV
    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731
    # A bias in the output layer, so generations end: every embedding carries a constant component (dimension
    # 0) that survives the one layer and the norm, and the output weights read it as "not whitespace, close
    # strings, arrays and objects sooner". Random weights alone spend max_tokens on the whitespace the JSON
    # grammar allows between tokens. The grammar still decides what is legal.
    embd = t(n_vocab, N_EMBD, scale=1.0)
    embd[:, 0] = BIAS_DIM
    out = t(n_vocab, N_EMBD, scale=0.3)
    # Single characters are preferred over longer tokens: a string the grammar bounds by a character class
    # (`[A-Z0-9]+` before a required `-`) then reaches the character that ends it within tens of tokens,
    # where a random pick among thousands of multi-letter tokens would run to max_tokens.
    for i, tok in enumerate(tokens):
        s = tok if isinstance(tok, str) else str(tok)
        if s in END_TOKENS:
            out[i, 0] = 3.0
        elif s and all(c in WHITESPACE for c in s):
            out[i, 0] = -3.0
        elif any(c in s for c in '"]}'):
            out[i, 0] = 2.5 if len(s) == 1 else 1.0
        elif len(s) == 1:
            out[i, 0] = 2.0
        else:
            out[i, 0] = 0.0
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", ones(N_EMBD))
    w.add_tensor("output.weight", out)
    w.add_tensor("blk.0.attn_norm.weight", ones(N_EMBD))
    w.add_tensor("blk.0.attn_q.weight", t(N_EMBD, N_EMBD))
    w.add_tensor("blk.0.attn_q.bias", t(N_EMBD))
    w.add_tensor("blk.0.attn_k.weight", t(kv, N_EMBD))
    w.add_tensor("blk.0.attn_k.bias", t(kv))
    w.add_tensor("blk.0.attn_v.weight", t(kv, N_EMBD))
    w.add_tensor("blk.0.attn_v.bias", t(kv))
    w.add_tensor("blk.0.attn_output.weight", t(N_EMBD, N_EMBD))
    w.add_tensor("blk.0.ffn_norm.weight", ones(N_EMBD))
    w.add_tensor("blk.0.ffn_gate.weight", t(N_FF, N_EMBD))
    w.add_tensor("blk.0.ffn_up.weight", t(N_FF, N_EMBD))
    w.add_tensor("blk.0.ffn_down.weight", t(N_EMBD, N_FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
