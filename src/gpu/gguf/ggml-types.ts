/**
 * Storage size of each `ggml_type`: elements per block and bytes per block, as in
 * ggml's `type_traits` (ggml/src/ggml.c) and gguf-py's `GGML_QUANT_SIZES`
 * (gguf-py/gguf/constants.py). Ids are `enum ggml_type` in ggml/include/ggml.h; the
 * gaps (4, 5, 31–33, 36–38) are types removed from GGUF files. QK_K = 256.
 * A tensor's bytes = ne0 / block × bytes_per_block × ne1 × ne2 × ne3 (ggml_nbytes for a
 * contiguous tensor; ne0 must be a multiple of the block size).
 */

export interface GgmlTypeInfo {
  name: string;
  block: number;
  bytes: number;
}

const QK_K = 256;

export const GGML_TYPES: Readonly<Record<number, GgmlTypeInfo>> = {
  0: { name: "F32", block: 1, bytes: 4 },
  1: { name: "F16", block: 1, bytes: 2 },
  2: { name: "Q4_0", block: 32, bytes: 2 + 16 },
  3: { name: "Q4_1", block: 32, bytes: 2 + 2 + 16 },
  6: { name: "Q5_0", block: 32, bytes: 2 + 4 + 16 },
  7: { name: "Q5_1", block: 32, bytes: 2 + 2 + 4 + 16 },
  8: { name: "Q8_0", block: 32, bytes: 2 + 32 },
  9: { name: "Q8_1", block: 32, bytes: 4 + 32 },
  10: { name: "Q2_K", block: QK_K, bytes: 2 * 2 + QK_K / 16 + QK_K / 4 },
  11: { name: "Q3_K", block: QK_K, bytes: 2 + QK_K / 4 + QK_K / 8 + 12 },
  12: { name: "Q4_K", block: QK_K, bytes: 2 * 2 + 12 + QK_K / 2 },
  13: { name: "Q5_K", block: QK_K, bytes: 2 * 2 + 12 + QK_K / 2 + QK_K / 8 },
  14: { name: "Q6_K", block: QK_K, bytes: 2 + QK_K / 16 + (3 * QK_K) / 4 },
  15: { name: "Q8_K", block: QK_K, bytes: 4 + QK_K + QK_K / 8 },
  16: { name: "IQ2_XXS", block: QK_K, bytes: 2 + QK_K / 4 },
  17: { name: "IQ2_XS", block: QK_K, bytes: 2 + QK_K / 4 + QK_K / 32 },
  18: { name: "IQ3_XXS", block: QK_K, bytes: 2 + QK_K / 4 + QK_K / 8 },
  19: { name: "IQ1_S", block: QK_K, bytes: 2 + QK_K / 8 + QK_K / 16 },
  20: { name: "IQ4_NL", block: 32, bytes: 2 + 16 },
  21: { name: "IQ3_S", block: QK_K, bytes: 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4 },
  22: { name: "IQ2_S", block: QK_K, bytes: 2 + QK_K / 4 + QK_K / 16 },
  23: { name: "IQ4_XS", block: QK_K, bytes: 2 + 2 + QK_K / 2 + QK_K / 64 },
  24: { name: "I8", block: 1, bytes: 1 },
  25: { name: "I16", block: 1, bytes: 2 },
  26: { name: "I32", block: 1, bytes: 4 },
  27: { name: "I64", block: 1, bytes: 8 },
  28: { name: "F64", block: 1, bytes: 8 },
  29: { name: "IQ1_M", block: QK_K, bytes: QK_K / 8 + QK_K / 16 + QK_K / 32 },
  30: { name: "BF16", block: 1, bytes: 2 },
  34: { name: "TQ1_0", block: QK_K, bytes: 2 + 4 * 13 },
  35: { name: "TQ2_0", block: QK_K, bytes: 2 + 64 },
  39: { name: "MXFP4", block: 32, bytes: 1 + 16 },
  40: { name: "NVFP4", block: 64, bytes: 4 + 32 },
  41: { name: "Q1_0", block: 128, bytes: 2 + 16 },
};

export type TensorSize =
  | { ok: true; bytes: number; elements: number }
  | { ok: false; reason: string };

export function tensorSize(type: number, dims: readonly number[]): TensorSize {
  const t = GGML_TYPES[type];
  if (!t) return { ok: false, reason: `unknown ggml type ${type} (newer than this qm?)` };
  const ne0 = dims[0] ?? 1;
  if (ne0 % t.block !== 0) {
    return {
      ok: false,
      reason: `row of ${ne0} is not a multiple of ${t.name}'s block of ${t.block}`,
    };
  }
  let rows = 1;
  for (const d of dims.slice(1)) rows *= d;
  const bytes = (ne0 / t.block) * t.bytes * rows;
  if (!Number.isSafeInteger(bytes))
    return { ok: false, reason: `tensor too large (${bytes} bytes)` };
  return { ok: true, bytes, elements: ne0 * rows };
}

export function ggmlTypeName(type: number): string {
  return GGML_TYPES[type]?.name ?? `type ${type}`;
}
