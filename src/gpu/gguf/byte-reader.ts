/**
 * A little-endian cursor over a ByteSource that reads ahead in chunks. Scalars are read
 * from the buffer synchronously after `need()`; only a refill awaits, so walking the
 * 150 000 strings of a tokenizer array costs a handful of reads, not 150 000. `skip()`
 * moves past data without reading it when it lies beyond the buffer.
 */
import type { ByteSource } from "./byte-source.ts";

export class GgufError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GgufError";
  }
}

const CHUNK = 1 << 20;
const decoder = new TextDecoder("utf-8", { fatal: false });

export class ByteReader {
  #buf: Uint8Array = new Uint8Array(0);
  #view: DataView = new DataView(this.#buf.buffer);
  #bufStart = 0;
  pos = 0;

  constructor(
    readonly source: ByteSource,
    readonly chunk = CHUNK,
  ) {}

  get remaining(): number {
    return this.source.size - this.pos;
  }

  /** Ensures `n` bytes at `pos` are buffered; throws a truncation error naming `what`. */
  async need(n: number, what: string): Promise<void> {
    if (n > this.remaining) {
      throw new GgufError(`truncated at byte ${this.source.size} while reading ${what}`);
    }
    const off = this.pos - this.#bufStart;
    if (off >= 0 && off + n <= this.#buf.length) return;
    const end = Math.min(this.source.size, this.pos + Math.max(n, this.chunk));
    const bytes = await this.source.read(this.pos, end);
    if (bytes.length < n)
      throw new GgufError(`short read at byte ${this.pos} while reading ${what}`);
    this.#buf = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#bufStart = this.pos;
  }

  /** True when `n` bytes at `pos` are already buffered: the caller may read without `need`. */
  buffered(n: number): boolean {
    const off = this.pos - this.#bufStart;
    return off >= 0 && off + n <= this.#buf.length;
  }

  skip(n: number, what: string): void {
    if (n > this.remaining) {
      throw new GgufError(`truncated at byte ${this.source.size} while skipping ${what}`);
    }
    this.pos += n;
  }

  #at(n: number): number {
    const off = this.pos - this.#bufStart;
    this.pos += n;
    return off;
  }

  u8(): number {
    return this.#view.getUint8(this.#at(1));
  }
  i8(): number {
    return this.#view.getInt8(this.#at(1));
  }
  u16(): number {
    return this.#view.getUint16(this.#at(2), true);
  }
  i16(): number {
    return this.#view.getInt16(this.#at(2), true);
  }
  u32(): number {
    return this.#view.getUint32(this.#at(4), true);
  }
  i32(): number {
    return this.#view.getInt32(this.#at(4), true);
  }
  f32(): number {
    return this.#view.getFloat32(this.#at(4), true);
  }
  f64(): number {
    return this.#view.getFloat64(this.#at(8), true);
  }
  u64(): bigint {
    return this.#view.getBigUint64(this.#at(8), true);
  }
  i64(): bigint {
    return this.#view.getBigInt64(this.#at(8), true);
  }

  /** A u64 that must fit a JS number (counts, lengths, offsets). */
  async count(what: string): Promise<number> {
    await this.need(8, what);
    return this.countBuffered(what);
  }

  /** `count()` for when 8 bytes are known to be buffered. */
  countBuffered(what: string): number {
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new GgufError(`${what} is implausible (${v})`);
    return Number(v);
  }

  /** A `gguf_string_t`: u64 length, then UTF-8 bytes (not NUL-terminated). */
  async string(what: string): Promise<string> {
    const len = await this.count(`${what} length`);
    if (len > this.remaining) {
      throw new GgufError(`${what} claims ${len} bytes, past the end of the file`);
    }
    await this.need(len, what);
    const off = this.#at(len);
    return decoder.decode(this.#buf.subarray(off, off + len));
  }

  /** Skips `n` strings; synchronous while their lengths are in the buffer. */
  async skipStrings(n: number, what: string): Promise<void> {
    for (let i = 0; i < n; i++) {
      if (!this.buffered(8)) await this.need(8, `${what} length`);
      this.skip(this.countBuffered(`${what} length`), what);
    }
  }
}
