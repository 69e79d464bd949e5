import { expect, test } from "bun:test";
import { GGML_TYPES, tensorSize } from "../../../src/gpu/gguf/ggml-types.ts";

// Bits per weight as llama.cpp's quantize tool and the k-quants/i-quants PRs state them.
const BPW: Record<string, number> = {
  F32: 32,
  F16: 16,
  BF16: 16,
  Q4_0: 4.5,
  Q4_1: 5,
  Q5_0: 5.5,
  Q5_1: 6,
  Q8_0: 8.5,
  Q8_1: 9,
  Q2_K: 2.625,
  Q3_K: 3.4375,
  Q4_K: 4.5,
  Q5_K: 5.5,
  Q6_K: 6.5625,
  Q8_K: 9.125,
  IQ2_XXS: 2.0625,
  IQ2_XS: 2.3125,
  IQ2_S: 2.5625,
  IQ3_XXS: 3.0625,
  IQ3_S: 3.4375,
  IQ1_S: 1.5625,
  IQ1_M: 1.75,
  IQ4_NL: 4.5,
  IQ4_XS: 4.25,
  TQ1_0: 1.6875,
  TQ2_0: 2.0625,
  MXFP4: 4.25,
  NVFP4: 4.5,
  Q1_0: 1.125,
  I8: 8,
  I16: 16,
  I32: 32,
  I64: 64,
  F64: 64,
};

test("every type's block size gives its known bits per weight", () => {
  const names = Object.values(GGML_TYPES).map((t) => t.name);
  expect(names.sort()).toEqual(Object.keys(BPW).sort());
  for (const t of Object.values(GGML_TYPES)) {
    expect([t.name, (t.bytes * 8) / t.block]).toEqual([t.name, BPW[t.name]!]);
  }
});

test("ids follow enum ggml_type", () => {
  const ids = Object.fromEntries(Object.entries(GGML_TYPES).map(([id, t]) => [t.name, Number(id)]));
  expect(ids).toMatchObject({ F32: 0, F16: 1, Q4_0: 2, Q8_0: 8, Q2_K: 10, Q6_K: 14, IQ2_XXS: 16 });
  expect(ids).toMatchObject({ IQ4_XS: 23, BF16: 30, TQ1_0: 34, TQ2_0: 35, MXFP4: 39, NVFP4: 40 });
  for (const removed of [4, 5, 31, 32, 33, 36, 37, 38]) expect(GGML_TYPES[removed]).toBeUndefined();
});

test("tensorSize: rows of blocks times the other dims", () => {
  expect(tensorSize(12, [4096, 32000])).toEqual({
    ok: true,
    bytes: 16 * 144 * 32000,
    elements: 4096 * 32000,
  });
  expect(tensorSize(0, [7])).toEqual({ ok: true, bytes: 28, elements: 7 });
  expect(tensorSize(0, [])).toEqual({ ok: true, bytes: 4, elements: 1 });
  expect(tensorSize(2, [32, 2, 3, 4])).toEqual({ ok: true, bytes: 18 * 24, elements: 768 });
  expect(tensorSize(2, [48])).toMatchObject({ ok: false });
  expect(tensorSize(99, [32])).toEqual({
    ok: false,
    reason: "unknown ggml type 99 (newer than this qm?)",
  });
});
