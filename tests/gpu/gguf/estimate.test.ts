import { describe, expect, test } from "bun:test";
import { bytesSource } from "../../../src/gpu/gguf/byte-source.ts";
import {
  defaultContext,
  estimateVramGb,
  OVERHEAD_FIXED_BYTES,
  roundUpTenth,
  sizeModel,
} from "../../../src/gpu/gguf/estimate.ts";
import { readGgufHeader } from "../../../src/gpu/gguf/read-header.ts";
import type { GgufHeader } from "../../../src/gpu/gguf/types.ts";
import { type LlamaShape, llama, totalBytes } from "./fake-models.ts";
import { buildGguf, type GgufSpec, val } from "./gguf-writer.ts";

const GiB = 2 ** 30;
const MiB = 2 ** 20;

async function header(spec: GgufSpec): Promise<GgufHeader> {
  const r = await readGgufHeader(bytesSource(buildGguf(spec).bytes));
  if (!r.ok) throw new Error(r.reason);
  return r.header;
}

// Llama-3-8B's shape: 32 layers, 4096 wide, 32 heads, 8 KV heads, 128k vocab.
const L3_8B: LlamaShape = {
  layers: 32,
  embd: 4096,
  heads: 32,
  kvHeads: 8,
  ffn: 14336,
  vocab: 128256,
  ctxLen: 131072,
  type: "Q4_K",
  fileType: 15,
};

describe("sizeModel", () => {
  test("Llama-3-8B Q4_K at 8192: weights from tensor infos, KV exactly 1 GiB", async () => {
    const spec = llama(L3_8B);
    const est = sizeModel(await header(spec));
    // 2 (K, V) × 32 layers × 8192 ctx × 8 kv heads × 128 head dim × 2 bytes (f16)
    expect(est.kvBytes).toBe(2 * 32 * 8192 * 8 * 128 * 2);
    expect(est.kvBytes).toBe(GiB);
    expect(est.weightsBytes).toBe(totalBytes(spec.tensors));
    // 8.03 B weights in Q4_K at 4.5 bits each, plus 65 f32 norm vectors.
    const params = 2 * 4096 * 128256 + 32 * (2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336);
    expect(params).toBe(8_029_995_008);
    expect(est.weightsBytes).toBe((params * 4.5) / 8 + 65 * 4096 * 4);
    expect(est.ctx).toBe(8192);
    expect(est.overheadBytes).toBe(OVERHEAD_FIXED_BYTES + 0.05 * (est.weightsBytes + GiB));
    expect(est.totalBytes).toBe(est.weightsBytes + est.kvBytes + est.overheadBytes);
    expect(est.gb).toBe(roundUpTenth(est.totalBytes / GiB));
    // (4.208 GiB + 1 GiB) × 1.05 + 0.5 GiB = 5.968 GiB → 6.0
    expect(est.gb).toBe(6.0);
    expect(est.notes).toEqual([]);
  });

  test("overhead: 512 MiB plus 5 % of weights + KV, then up to the next 0.1 GB", () => {
    const m = {
      metadata: new Map(),
      tensors: [{ name: "w", dims: [GiB], type: 24, offset: 0, bytes: 4 * GiB }],
    };
    const est = sizeModel(m);
    expect(est.overheadBytes).toBe(512 * MiB + 0.2 * GiB);
    expect(est.totalBytes / GiB).toBeCloseTo(4.7, 10);
    expect(est.gb).toBe(4.7);
    expect(roundUpTenth(4.70000001)).toBe(4.8);
    expect(roundUpTenth(6.2)).toBe(6.2);
  });

  test("context: the model's, capped at 8192, unless given", async () => {
    const h = (ctxLen: number) => header(llama({ ...L3_8B, layers: 1, vocab: 256, ctxLen }));
    expect(defaultContext(await h(131072))).toBe(8192);
    expect(defaultContext(await h(2048))).toBe(2048);
    const big = await h(131072);
    expect(sizeModel(big, { ctx: 32768 }).kvBytes).toBe(2 * 1 * 32768 * 8 * 128 * 2);
    expect(estimateVramGb(big, 32768)).toBe(sizeModel(big, { ctx: 32768 }).gb);
    expect(defaultContext({ metadata: new Map(), tensors: [] })).toBe(8192);
  });

  test("per-layer head_count_kv: layers without attention hold no KV", async () => {
    const h = await header(llama({ ...L3_8B, layers: 4, vocab: 256, kvHeads: [8, 0, 4, 0] }));
    expect(sizeModel(h, { ctx: 1000 }).kvBytes).toBe(1000 * (8 + 4) * (128 + 128) * 2);
  });

  test("key_length / value_length override embd / heads (Gemma-style heads)", async () => {
    const spec = llama({
      ...L3_8B,
      arch: "gemma2",
      layers: 2,
      vocab: 256,
      embd: 2304,
      heads: 8,
      kvHeads: 4,
      extraKv: [
        ["gemma2.attention.key_length", val.u32(256)],
        ["gemma2.attention.value_length", val.u32(256)],
      ],
    });
    expect(sizeModel(await header(spec), { ctx: 100 }).kvBytes).toBe(2 * 2 * 100 * 4 * 256 * 2);
  });

  test("MLA (kv_lora_rank): one latent of rank + rope dims for K, rank for V", async () => {
    const spec = llama({
      ...L3_8B,
      arch: "deepseek2",
      layers: 3,
      vocab: 256,
      heads: 128,
      kvHeads: 128,
      embd: 7168,
      ffn: 256,
      extraKv: [
        ["deepseek2.attention.kv_lora_rank", val.u32(512)],
        ["deepseek2.rope.dimension_count", val.u32(64)],
      ],
    });
    expect(sizeModel(await header(spec), { ctx: 10 }).kvBytes).toBe(3 * 10 * (512 + 64 + 512) * 2);
  });

  test("--gpu-layers N counts the last N layers and their KV; N > n_layer counts all", async () => {
    const spec = llama({ ...L3_8B, layers: 4, vocab: 1024 });
    const h = await header(spec);
    const blk = (from: number) =>
      totalBytes(
        spec.tensors.filter(
          (t) => /^blk\.(\d+)\./.exec(t.name) && Number(t.name.split(".")[1]) >= from,
        ),
      );
    const two = sizeModel(h, { ctx: 100, gpuLayers: 2 });
    expect(two.weightsBytes).toBe(blk(2));
    expect(two.kvBytes).toBe(2 * 100 * 8 * 256 * 2);
    expect(sizeModel(h, { ctx: 100, gpuLayers: 0 })).toMatchObject({ weightsBytes: 0, kvBytes: 0 });
    expect(sizeModel(h, { ctx: 100, gpuLayers: 4 }).weightsBytes).toBe(blk(0));
    const all = sizeModel(h, { ctx: 100 });
    expect(sizeModel(h, { ctx: 100, gpuLayers: 5 })).toEqual(all);
    expect(all.weightsBytes).toBe(totalBytes(spec.tensors));
  });

  test("no attention metadata: weights only, and a note says so", () => {
    const est = sizeModel({
      metadata: new Map([["general.architecture", "mamba"]]),
      tensors: [{ name: "w", dims: [32], type: 0, offset: 0, bytes: 128 }],
    });
    expect(est.kvBytes).toBe(0);
    expect(est.notes).toEqual(["no attention metadata: KV cache not counted"]);
  });
});
