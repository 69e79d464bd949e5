/**
 * A tiny GGUF writer for tests: valid headers (v2 or v3, little-endian) with fake tensor
 * infos and, by default, no tensor data. `writeModelFile` extends the file to its full
 * size with a sparse truncate, so a "7B model" costs a few kilobytes of disk.
 */
import { truncate, writeFile } from "node:fs/promises";

export class Writer {
  #buf = new Uint8Array(1024);
  #len = 0;
  #grow(n: number): number {
    if (this.#len + n > this.#buf.length) {
      const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
      next.set(this.#buf.subarray(0, this.#len));
      this.#buf = next;
    }
    const at = this.#len;
    this.#len += n;
    return at;
  }
  /** A view of the next `n` bytes (taken after growing, which may move the buffer). */
  #at(n: number): DataView {
    const at = this.#grow(n);
    return new DataView(this.#buf.buffer, at, n);
  }
  get length(): number {
    return this.#len;
  }
  bytes(b: Uint8Array): void {
    const at = this.#grow(b.length);
    this.#buf.set(b, at);
  }
  u8 = (n: number) => this.#at(1).setUint8(0, n);
  i8 = (n: number) => this.#at(1).setInt8(0, n);
  u16 = (n: number) => this.#at(2).setUint16(0, n, true);
  i16 = (n: number) => this.#at(2).setInt16(0, n, true);
  u32 = (n: number) => this.#at(4).setUint32(0, n, true);
  i32 = (n: number) => this.#at(4).setInt32(0, n, true);
  f32 = (n: number) => this.#at(4).setFloat32(0, n, true);
  f64 = (n: number) => this.#at(8).setFloat64(0, n, true);
  u64 = (n: number | bigint) => this.#at(8).setBigUint64(0, BigInt(n), true);
  i64 = (n: number | bigint) => this.#at(8).setBigInt64(0, BigInt(n), true);
  str = (s: string) => {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.bytes(b);
  };
  finish(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

/** A typed metadata value: its GGUF type id and how to write it. */
export interface Val {
  type: number;
  write(w: Writer): void;
}

const scalar =
  <T>(type: number, f: (w: Writer, x: T) => void) =>
  (x: T): Val => ({ type, write: (w) => f(w, x) });

export const val = {
  u8: scalar<number>(0, (w, x) => w.u8(x)),
  i8: scalar<number>(1, (w, x) => w.i8(x)),
  u16: scalar<number>(2, (w, x) => w.u16(x)),
  i16: scalar<number>(3, (w, x) => w.i16(x)),
  u32: scalar<number>(4, (w, x) => w.u32(x)),
  i32: scalar<number>(5, (w, x) => w.i32(x)),
  f32: scalar<number>(6, (w, x) => w.f32(x)),
  bool: scalar<boolean>(7, (w, x) => w.u8(x ? 1 : 0)),
  str: scalar<string>(8, (w, x) => w.str(x)),
  u64: scalar<number | bigint>(10, (w, x) => w.u64(x)),
  i64: scalar<number | bigint>(11, (w, x) => w.i64(x)),
  f64: scalar<number>(12, (w, x) => w.f64(x)),
  arr: (itemType: number, items: Val[]): Val => ({
    type: 9,
    write: (w) => {
      w.u32(itemType);
      w.u64(items.length);
      for (const i of items) i.write(w);
    },
  }),
  strs: (xs: string[]): Val => val.arr(8, xs.map(val.str)),
  u32s: (xs: number[]): Val => val.arr(4, xs.map(val.u32)),
  i32s: (xs: number[]): Val => val.arr(5, xs.map(val.i32)),
  /** Written in one piece: big score arrays would be slow value by value. */
  f32s: (xs: number[]): Val => ({
    type: 9,
    write: (w) => {
      w.u32(6);
      w.u64(xs.length);
      w.bytes(new Uint8Array(new Float32Array(xs).buffer));
    },
  }),
};

export interface TensorSpec {
  name: string;
  dims: number[];
  type: number;
  /** Data size, to lay out offsets (computed by the test, independently of qm's table). */
  bytes: number;
  offset?: number;
}

export interface GgufSpec {
  version?: number;
  kv?: [string, Val][];
  tensors?: TensorSpec[];
  alignment?: number;
  /** Append real (zero) tensor data. Keep tensors tiny when set. */
  withData?: boolean;
}

export interface BuiltGguf {
  bytes: Uint8Array;
  dataOffset: number;
  dataBytes: number;
}

export function buildGguf(spec: GgufSpec): BuiltGguf {
  const align = spec.alignment ?? 32;
  const w = new Writer();
  w.bytes(new TextEncoder().encode("GGUF"));
  w.u32(spec.version ?? 3);
  const tensors = spec.tensors ?? [];
  const kv = spec.kv ?? [];
  w.u64(tensors.length);
  w.u64(kv.length);
  for (const [key, v] of kv) {
    w.str(key);
    w.u32(v.type);
    v.write(w);
  }
  let next = 0;
  let dataBytes = 0;
  for (const t of tensors) {
    const offset = t.offset ?? next;
    next = Math.ceil((offset + t.bytes) / align) * align;
    dataBytes = Math.max(dataBytes, offset + t.bytes);
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(offset);
  }
  const dataOffset = Math.ceil(w.length / align) * align;
  if (spec.withData) w.bytes(new Uint8Array(dataOffset - w.length + dataBytes));
  return { bytes: w.finish(), dataOffset, dataBytes };
}

/** Writes the header and extends the file (sparse) to the size its tensors claim. */
export async function writeModelFile(path: string, spec: GgufSpec): Promise<BuiltGguf> {
  const built = buildGguf(spec);
  await writeFile(path, built.bytes);
  await truncate(path, built.dataOffset + built.dataBytes);
  return built;
}
