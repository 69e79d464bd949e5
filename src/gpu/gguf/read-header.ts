/**
 * Reads a GGUF header (spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
 *
 *   magic "GGUF" · u32 version · u64 tensor_count · u64 metadata_kv_count
 *   kv × (string key · u32 value_type · value) · tensor_info × (string name ·
 *   u32 n_dims · u64 dims[n_dims] · u32 ggml_type · u64 offset) · padding to
 *   general.alignment · tensor data
 *
 * v2 widened counts and lengths from u32 to u64; v3 only added big-endian files, so
 * v2 and v3 little-endian files share one layout. v1 and big-endian files are refused.
 * Only the header is read; large arrays (tokenizer vocabularies) are skipped unread
 * where their element size is fixed, and walked length by length where it is not.
 */

import { ByteReader, GgufError } from "./byte-reader.ts";
import type { ByteSource } from "./byte-source.ts";
import { fileSource } from "./byte-source.ts";
import { tensorSize } from "./ggml-types.ts";
import {
  type GgufArray,
  type GgufHeader,
  GgufType,
  type GgufValue,
  type TensorInfo,
} from "./types.ts";

export type GgufRead = { ok: true; header: GgufHeader } | { ok: false; reason: string };

/** Arrays up to this length are kept (per-layer head counts); longer ones are skipped. */
export const ARRAY_KEEP_LIMIT = 4096;
/** GGML_MAX_DIMS; llama.cpp's gguf reader refuses more. */
const MAX_DIMS = 4;
const MAX_ARRAY_DEPTH = 8;
const DEFAULT_ALIGNMENT = 32;

const SCALAR_BYTES: Record<number, number> = {
  [GgufType.UINT8]: 1,
  [GgufType.INT8]: 1,
  [GgufType.UINT16]: 2,
  [GgufType.INT16]: 2,
  [GgufType.UINT32]: 4,
  [GgufType.INT32]: 4,
  [GgufType.FLOAT32]: 4,
  [GgufType.BOOL]: 1,
  [GgufType.UINT64]: 8,
  [GgufType.INT64]: 8,
  [GgufType.FLOAT64]: 8,
};

export async function readGgufFile(path: string): Promise<GgufRead> {
  let source: ByteSource;
  try {
    source = await fileSource(path);
  } catch (err) {
    return {
      ok: false,
      reason: `cannot read: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  return readGgufHeader(source);
}

/** `chunkBytes`: read-ahead size (tests shrink it to cross every buffer boundary). */
export async function readGgufHeader(
  source: ByteSource,
  opts: { chunkBytes?: number } = {},
): Promise<GgufRead> {
  try {
    return { ok: true, header: await parse(new ByteReader(source, opts.chunkBytes)) };
  } catch (err) {
    if (err instanceof GgufError) return { ok: false, reason: err.message };
    return {
      ok: false,
      reason: `cannot read: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
}

async function parse(r: ByteReader): Promise<GgufHeader> {
  if (r.source.size < 4) throw new GgufError("not a GGUF file (too short)");
  await r.need(4, "magic");
  const magic = String.fromCharCode(r.u8(), r.u8(), r.u8(), r.u8());
  if (magic !== "GGUF")
    throw new GgufError(`not a GGUF file (starts with ${JSON.stringify(magic)})`);
  await r.need(4, "version");
  const version = r.u32();
  if (version === 1) throw new GgufError("GGUF v1 is not supported: re-convert the model");
  // A big-endian v2/v3 file read little-endian shows its version in the high byte.
  if (version >= 0x01000000 && (version & 0xffff) === 0) {
    throw new GgufError("big-endian GGUF is not supported");
  }
  if (version !== 2 && version !== 3) throw new GgufError(`unsupported GGUF version ${version}`);
  const tensorCount = await r.count("tensor_count");
  const kvCount = await r.count("metadata_kv_count");
  // Cheap plausibility first, so a corrupt count cannot make us loop for hours.
  if (kvCount * 13 > r.remaining || tensorCount * 24 > r.remaining) {
    throw new GgufError(
      `implausible counts (${tensorCount} tensors, ${kvCount} keys) for a file of ${r.source.size} bytes (truncated or corrupt?)`,
    );
  }
  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = await r.string(`key ${i}`);
    await r.need(4, `type of ${key}`);
    const type = r.u32();
    if (metadata.has(key)) throw new GgufError(`duplicate metadata key ${key}`);
    metadata.set(key, await readValue(r, type, key, 0));
  }
  const alignment = alignmentOf(metadata);
  const tensors: TensorInfo[] = [];
  let dataBytes = 0;
  for (let i = 0; i < tensorCount; i++) {
    const t = await readTensorInfo(r, i, alignment);
    tensors.push(t);
    dataBytes = Math.max(dataBytes, t.offset + t.bytes);
  }
  const dataOffset = Math.ceil(r.pos / alignment) * alignment;
  return { version, metadata, tensors, alignment, dataOffset, dataBytes, fileSize: r.source.size };
}

async function readTensorInfo(r: ByteReader, i: number, alignment: number): Promise<TensorInfo> {
  const name = await r.string(`tensor ${i} name`);
  await r.need(4, `tensor ${name} n_dims`);
  const nDims = r.u32();
  if (nDims > MAX_DIMS)
    throw new GgufError(`tensor ${name} has ${nDims} dimensions (max ${MAX_DIMS})`);
  const dims: number[] = [];
  for (let d = 0; d < nDims; d++) dims.push(await r.count(`tensor ${name} dims`));
  await r.need(4, `tensor ${name} type`);
  const type = r.u32();
  const offset = await r.count(`tensor ${name} offset`);
  if (offset % alignment !== 0) {
    throw new GgufError(`tensor ${name} offset ${offset} is not a multiple of ${alignment}`);
  }
  const size = tensorSize(type, dims);
  if (!size.ok) throw new GgufError(`tensor ${name}: ${size.reason}`);
  return { name, dims, type, offset, bytes: size.bytes };
}

function alignmentOf(metadata: Map<string, GgufValue>): number {
  const a = metadata.get("general.alignment");
  if (a === undefined) return DEFAULT_ALIGNMENT;
  // The spec requires a u32 that is a non-zero power of two.
  if (typeof a !== "number" || a <= 0 || !Number.isInteger(a) || (a & (a - 1)) !== 0) {
    throw new GgufError(`general.alignment ${String(a)} is not a power of two`);
  }
  return a;
}

function asNumber(v: bigint): number | bigint {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)
    ? Number(v)
    : v;
}

async function readValue(
  r: ByteReader,
  type: number,
  key: string,
  depth: number,
): Promise<GgufValue> {
  if (type === GgufType.STRING) return r.string(key);
  if (type === GgufType.ARRAY) return readArray(r, key, depth + 1);
  const size = SCALAR_BYTES[type];
  if (size === undefined) throw new GgufError(`unknown value type ${type} for ${key}`);
  await r.need(size, key);
  switch (type) {
    case GgufType.UINT8:
      return r.u8();
    case GgufType.INT8:
      return r.i8();
    case GgufType.UINT16:
      return r.u16();
    case GgufType.INT16:
      return r.i16();
    case GgufType.UINT32:
      return r.u32();
    case GgufType.INT32:
      return r.i32();
    case GgufType.FLOAT32:
      return r.f32();
    case GgufType.BOOL:
      return r.u8() !== 0;
    case GgufType.UINT64:
      return asNumber(r.u64());
    case GgufType.INT64:
      return asNumber(r.i64());
    default:
      return r.f64();
  }
}

async function readArray(r: ByteReader, key: string, depth: number): Promise<GgufArray> {
  if (depth > MAX_ARRAY_DEPTH) throw new GgufError(`arrays nested too deep in ${key}`);
  await r.need(4, `${key} item type`);
  const itemType = r.u32();
  const length = await r.count(`${key} length`);
  const minItem = SCALAR_BYTES[itemType] ?? (itemType === GgufType.STRING ? 8 : 12);
  if (
    itemType !== GgufType.STRING &&
    itemType !== GgufType.ARRAY &&
    SCALAR_BYTES[itemType] === undefined
  ) {
    throw new GgufError(`unknown array item type ${itemType} for ${key}`);
  }
  if (length * minItem > r.remaining) {
    throw new GgufError(`${key} claims ${length} items, past the end of the file`);
  }
  if (length <= ARRAY_KEEP_LIMIT) {
    const items: GgufValue[] = [];
    for (let i = 0; i < length; i++) items.push(await readValue(r, itemType, key, depth));
    return { kind: "array", itemType, length, items };
  }
  await skipItems(r, itemType, length, key, depth);
  return { kind: "array", itemType, length, items: null };
}

async function skipItems(r: ByteReader, itemType: number, n: number, key: string, depth: number) {
  if (depth > MAX_ARRAY_DEPTH) throw new GgufError(`arrays nested too deep in ${key}`);
  const size = SCALAR_BYTES[itemType];
  if (size !== undefined) return r.skip(size * n, key);
  if (itemType === GgufType.STRING) return r.skipStrings(n, key);
  if (itemType !== GgufType.ARRAY)
    throw new GgufError(`unknown array item type ${itemType} for ${key}`);
  for (let i = 0; i < n; i++) {
    await r.need(4, `${key} item type`);
    const inner = r.u32();
    await skipItems(r, inner, await r.count(`${key} length`), key, depth + 1);
  }
}
