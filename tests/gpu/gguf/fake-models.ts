/**
 * Shapes of real model families, as tensor lists with hand-computed sizes (a table of
 * its own, so the reader's sizes are checked against something it did not produce).
 */
import { type GgufSpec, type TensorSpec, type Val, val } from "./gguf-writer.ts";

/** ggml type id → [elements per block, bytes per block], for the types tests use. */
export const T = {
  F32: [0, 1, 4],
  F16: [1, 1, 2],
  Q4_0: [2, 32, 18],
  Q8_0: [8, 32, 34],
  Q4_K: [12, 256, 144],
  Q6_K: [14, 256, 210],
} as const;
type TypeName = keyof typeof T;

export function tensor(name: string, dims: number[], type: TypeName): TensorSpec {
  const [id, block, bytes] = T[type];
  const n = dims.reduce((a, b) => a * b, 1);
  return { name, dims, type: id, bytes: (n / block) * bytes };
}

export interface LlamaShape {
  arch?: string;
  layers: number;
  embd: number;
  heads: number;
  kvHeads: number | number[];
  ffn: number;
  vocab: number;
  ctxLen?: number;
  type?: TypeName;
  fileType?: number;
  extraKv?: [string, Val][];
}

/** A llama-style decoder: token_embd, per-layer attention + FFN, output head. */
export function llama(s: LlamaShape): GgufSpec & { tensors: TensorSpec[] } {
  const arch = s.arch ?? "llama";
  const type = s.type ?? "Q4_0";
  const headDim = s.embd / s.heads;
  const kvHeadsAt = (l: number) => (typeof s.kvHeads === "number" ? s.kvHeads : s.kvHeads[l]!);
  const tensors: TensorSpec[] = [tensor("token_embd.weight", [s.embd, s.vocab], type)];
  for (let l = 0; l < s.layers; l++) {
    const kv = Math.max(1, kvHeadsAt(l)) * headDim;
    tensors.push(
      tensor(`blk.${l}.attn_norm.weight`, [s.embd], "F32"),
      tensor(`blk.${l}.attn_q.weight`, [s.embd, s.embd], type),
      tensor(`blk.${l}.attn_k.weight`, [s.embd, kv], type),
      tensor(`blk.${l}.attn_v.weight`, [s.embd, kv], type),
      tensor(`blk.${l}.attn_output.weight`, [s.embd, s.embd], type),
      tensor(`blk.${l}.ffn_norm.weight`, [s.embd], "F32"),
      tensor(`blk.${l}.ffn_gate.weight`, [s.embd, s.ffn], type),
      tensor(`blk.${l}.ffn_up.weight`, [s.embd, s.ffn], type),
      tensor(`blk.${l}.ffn_down.weight`, [s.ffn, s.embd], type),
    );
  }
  tensors.push(
    tensor("output_norm.weight", [s.embd], "F32"),
    tensor("output.weight", [s.embd, s.vocab], type),
  );
  const kv: [string, Val][] = [
    ["general.architecture", val.str(arch)],
    ["general.name", val.str("test model")],
    [`${arch}.block_count`, val.u32(s.layers)],
    [`${arch}.context_length`, val.u32(s.ctxLen ?? 4096)],
    [`${arch}.embedding_length`, val.u32(s.embd)],
    [`${arch}.feed_forward_length`, val.u32(s.ffn)],
    [`${arch}.attention.head_count`, val.u32(s.heads)],
    [
      `${arch}.attention.head_count_kv`,
      typeof s.kvHeads === "number" ? val.u32(s.kvHeads) : val.i32s(s.kvHeads),
    ],
    ...(s.fileType === undefined
      ? []
      : [["general.file_type", val.u32(s.fileType)] as [string, Val]]),
    ["tokenizer.ggml.model", val.str("gpt2")],
    ...(s.extraKv ?? []),
  ];
  return { kv, tensors };
}

export function totalBytes(tensors: readonly TensorSpec[]): number {
  return tensors.reduce((a, t) => a + t.bytes, 0);
}
