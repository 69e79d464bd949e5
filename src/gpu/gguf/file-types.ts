/**
 * `general.file_type` is llama.cpp's `enum llama_ftype` (include/llama.h): the name a
 * quantisation is known by (Q4_K_M), which the tensor types alone cannot tell
 * (Q4_K_M and Q4_K_S both hold mostly Q4_K tensors).
 */
import { GGML_TYPES, ggmlTypeName } from "./ggml-types.ts";
import { metaNumber } from "./metadata.ts";
import type { GgufModel } from "./types.ts";

const FTYPES: Readonly<Record<number, string>> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
  36: "TQ1_0",
  37: "TQ2_0",
  38: "MXFP4_MOE",
  39: "NVFP4",
  40: "Q1_0",
};

/** The quantisation's name, else "mostly <type>" by bytes, else "unknown". */
export function quantLabel(model: GgufModel): string {
  const ft = metaNumber(model.metadata, "general.file_type");
  if (ft !== undefined && FTYPES[ft]) return FTYPES[ft];
  const byType = new Map<number, number>();
  for (const t of model.tensors) byType.set(t.type, (byType.get(t.type) ?? 0) + t.bytes);
  let best: number | undefined;
  for (const [type, bytes] of byType)
    if (best === undefined || bytes > byType.get(best)!) best = type;
  return best === undefined || !GGML_TYPES[best] ? "unknown" : `mostly ${ggmlTypeName(best)}`;
}

/** Σ elements of every tensor: the parameter count. */
export function parameterCount(model: GgufModel): number {
  let n = 0;
  for (const t of model.tensors) n += t.dims.reduce((a, b) => a * b, 1);
  return n;
}

export function formatParams(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(n >= 1e11 ? 0 : 1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  return `${n}`;
}
