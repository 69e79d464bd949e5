/**
 * VRAM estimate for a llama.cpp model: weights + KV cache + overhead, in bytes, then GB
 * (GiB) rounded *up* to 0.1 — an estimate that is short by a little OOMs, one that is
 * long by a little costs nothing.
 *
 * weights  Σ tensor bytes (ggml block sizes, see ggml-types.ts) of what is offloaded.
 * KV       n_ctx × Σ_layers (n_head_kv(l) × (key_length + value_length)) × 2 bytes
 *          — i.e. 2 (K and V) × n_layer × n_ctx × n_head_kv × head_dim × 2 for uniform
 *          models, with llama.cpp's default f16 cache (--cache-type-k/v f16).
 *          key_length/value_length default to embedding_length / head_count.
 *          MLA models (DeepSeek-V2/V3: `<arch>.attention.kv_lora_rank`) cache one
 *          compressed latent per token instead: K = kv_lora_rank + rope dims,
 *          V = kv_lora_rank, one "head".
 *          Sliding-window layers are counted at full context (an over-estimate; llama.cpp
 *          shrinks them unless --swa-full).
 * overhead 512 MiB + 5 % of (weights + KV). The fixed part is the CUDA context, cuBLAS
 *          workspace and llama.cpp's host-visible buffers, roughly constant per process
 *          (300–500 MiB observed); the proportional part stands for the compute buffer,
 *          which grows with model width, vocabulary and context (n_ubatch × n_vocab
 *          logits, attention scratch).
 *
 * With `gpuLayers` = N (llama-server -ngl N) the last N repeating layers are offloaded
 * (llama.cpp: layer il is on the GPU when il ≥ n_layer − N) with their KV cache; tensors
 * outside `blk.*` (output head, norms) count once N > n_layer. With all layers offloaded
 * token_embd is counted too, though llama.cpp keeps it in host memory: a deliberate
 * over-estimate of a few percent.
 */
import { BYTES_PER_GB } from "../units.ts";
import { layerValue, metaNumber, metaPerLayer, metaString } from "./metadata.ts";
import type { GgufModel } from "./types.ts";

export const DEFAULT_CTX_CAP = 8192;
export const KV_BYTES_PER_ELEMENT = 2;
export const OVERHEAD_FIXED_BYTES = 512 * 2 ** 20;
export const OVERHEAD_FRACTION = 0.05;

export interface SizeOptions {
  /** Context size; default: the model's context_length capped at DEFAULT_CTX_CAP. */
  ctx?: number;
  /** Offloaded layers (-ngl); default all. */
  gpuLayers?: number;
}

export interface VramEstimate {
  arch: string | null;
  ctx: number;
  nLayer: number | null;
  weightsBytes: number;
  kvBytes: number;
  overheadBytes: number;
  totalBytes: number;
  /** totalBytes in GB, rounded up to 0.1. */
  gb: number;
  /** What the estimate could not account for. */
  notes: string[];
}

export function defaultContext(model: GgufModel): number {
  const arch = metaString(model.metadata, "general.architecture");
  const trained = arch ? metaNumber(model.metadata, `${arch}.context_length`) : undefined;
  return trained && trained > 0 ? Math.min(trained, DEFAULT_CTX_CAP) : DEFAULT_CTX_CAP;
}

/** KV bytes per token for each layer, or null without attention metadata. */
export function kvBytesPerTokenByLayer(model: GgufModel): number[] | null {
  const m = model.metadata;
  const arch = metaString(m, "general.architecture");
  if (!arch) return null;
  const nLayer = metaNumber(m, `${arch}.block_count`);
  const heads = metaPerLayer(m, `${arch}.attention.head_count`);
  if (!nLayer || heads === undefined) return null;
  const kvHeads = metaPerLayer(m, `${arch}.attention.head_count_kv`) ?? heads;
  const loraRank = metaNumber(m, `${arch}.attention.kv_lora_rank`);
  const layers: number[] = [];
  if (loraRank) {
    const rope = metaNumber(m, `${arch}.rope.dimension_count`) ?? 0;
    for (let l = 0; l < nLayer; l++)
      layers.push((loraRank + rope + loraRank) * KV_BYTES_PER_ELEMENT);
    return layers;
  }
  const embd = metaNumber(m, `${arch}.embedding_length`);
  const h0 = typeof heads === "number" ? heads : (heads.find((h) => h > 0) ?? 0);
  const fallback = embd && h0 ? embd / h0 : undefined;
  const keyLen = metaNumber(m, `${arch}.attention.key_length`) ?? fallback;
  const valLen = metaNumber(m, `${arch}.attention.value_length`) ?? fallback;
  if (keyLen === undefined || valLen === undefined) return null;
  for (let l = 0; l < nLayer; l++) {
    layers.push(layerValue(kvHeads, l) * (keyLen + valLen) * KV_BYTES_PER_ELEMENT);
  }
  return layers;
}

const BLOCK = /^blk\.(\d+)\./;

export function sizeModel(model: GgufModel, opts: SizeOptions = {}): VramEstimate {
  const arch = metaString(model.metadata, "general.architecture") ?? null;
  const nLayer = arch ? (metaNumber(model.metadata, `${arch}.block_count`) ?? null) : null;
  const ctx = opts.ctx ?? defaultContext(model);
  const notes: string[] = [];
  const all = opts.gpuLayers === undefined || nLayer === null || opts.gpuLayers > nLayer;
  const firstGpuLayer = all || nLayer === null ? 0 : nLayer - Math.max(0, opts.gpuLayers!);
  if (opts.gpuLayers !== undefined && nLayer === null) {
    notes.push("no block_count: all layers counted as offloaded");
  }
  let weightsBytes = 0;
  for (const t of model.tensors) {
    const blk = BLOCK.exec(t.name);
    if (blk ? Number(blk[1]) >= firstGpuLayer : all) weightsBytes += t.bytes;
  }
  let kvBytes = 0;
  const perLayer = kvBytesPerTokenByLayer(model);
  if (perLayer === null) notes.push("no attention metadata: KV cache not counted");
  else for (let l = firstGpuLayer; l < perLayer.length; l++) kvBytes += perLayer[l]! * ctx;
  const overheadBytes = OVERHEAD_FIXED_BYTES + OVERHEAD_FRACTION * (weightsBytes + kvBytes);
  const totalBytes = weightsBytes + kvBytes + overheadBytes;
  return {
    arch,
    ctx,
    nLayer,
    weightsBytes,
    kvBytes,
    overheadBytes,
    totalBytes,
    gb: roundUpTenth(totalBytes / BYTES_PER_GB),
    notes,
  };
}

/** `est_vram_gb` for `model` at `ctx` (default: see defaultContext), all layers on the GPU. */
export function estimateVramGb(model: GgufModel, ctx?: number, opts: SizeOptions = {}): number {
  return sizeModel(model, { ...opts, ...(ctx === undefined ? {} : { ctx }) }).gb;
}

/** Up to the next 0.1; the epsilon keeps 6.2 (stored as 6.2000000001) at 6.2. */
export function roundUpTenth(gb: number): number {
  return Math.ceil(gb * 10 - 1e-9) / 10;
}
