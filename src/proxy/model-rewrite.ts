/**
 * Puts the model name the client asked for into an OpenAI answer's `"model"` field as the
 * bytes pass, SSE or a whole JSON body: upstreams answer with their own name for the model (a
 * GGUF path, a repository name), and a client should see the name it sent — on every API.
 *
 * Cheap on the hot path: one native byte search per chunk for `"model"`; a value that is
 * already the client's name leaves the chunk as it is (no copy). Only a key followed by `:`
 * and a string counts (a JSON value "model" is followed by `,` or `}`; the text of a message
 * holds the word only with its quotes escaped, never as `"model"`). A field cut by a chunk
 * boundary is held back until its value closes — a few bytes, at most `MAX_HELD` — so a split
 * never hides it.
 */
import { bytesAt, copyBytes, endsWithStartOf, indexOfBytes } from "../shared/bytes.ts";
import { HoldingRewrite } from "./holding-rewrite.ts";

const KEY = Buffer.from('"model"');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
/** Past this a field still open is no model name: it goes on as it is. */
const MAX_HELD = 4096;

function isSpace(b: number | undefined): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

/** The names clients send are few: their JSON bytes are made once each. */
const encoded = new Map<string, Buffer>();
const ENCODED_MAX = 256;

function jsonBytes(name: string): Buffer {
  let v = encoded.get(name);
  if (v === undefined) {
    v = Buffer.from(JSON.stringify(name));
    if (encoded.size >= ENCODED_MAX) encoded.clear();
    encoded.set(name, v);
  }
  return v;
}

/**
 * A whole body with its `"model"` fields set to `name`; the body itself (no copy, no state)
 * when it has no such field or already says `name`.
 */
export function rewriteWhole(
  body: Uint8Array,
  name: string,
  learn?: (upstreamValue: Buffer) => void,
): Uint8Array {
  if (indexOfBytes(body, KEY) < 0) return body;
  const rewrite = new ModelRewrite(name, learn);
  const out = rewrite.feed(body);
  const held = rewrite.end();
  return held ? Buffer.concat([out, held]) : out;
}

export class ModelRewrite extends HoldingRewrite {
  private readonly value: Buffer;
  /**
   * The first field seen as the upstream wrote it (`"model":"…"`, its spacing included) and
   * the same field with the client's name: a stream repeats that field in every chunk, so a
   * chunk that holds it once, whole, is rewritten with one search and one copy.
   */
  private seenField: Buffer | null = null;
  private ownField: Buffer | null = null;

  /** `learn`: told the upstream's own value (a JSON string, quotes included) once, when first seen. */
  constructor(
    name: string,
    private readonly learn?: (upstreamValue: Buffer) => void,
  ) {
    super();
    this.value = jsonBytes(name);
  }

  protected rewrite(buf: Buffer, carried: boolean, chunk: Uint8Array): Uint8Array {
    let parts: Uint8Array[] | null = null;
    let from = 0;
    let stop = buf.length;
    /** Where the last field seen ended: a partial key can only start after it. */
    let seen = 0;
    for (let at = buf.indexOf(KEY); at >= 0; ) {
      const field = this.field(buf, at);
      if (field === "open") {
        if (buf.length - at <= MAX_HELD) stop = at;
        break;
      }
      if (field === null) {
        at = buf.indexOf(KEY, at + 1);
        continue;
      }
      const [start, end] = field;
      seen = end;
      if (this.seenField === null) this.remember(buf, at, start, end);
      if (!this.value.equals(buf.subarray(start, end))) {
        parts ??= [];
        parts.push(buf.subarray(from, start), this.value);
        from = end;
      }
      at = buf.indexOf(KEY, end);
    }
    if (stop === buf.length) stop = buf.length - this.partialKey(buf, seen);
    if (stop < buf.length) this.held = Buffer.from(buf.subarray(stop));
    if (parts === null) {
      return !carried && stop === buf.length ? chunk : buf.subarray(0, stop);
    }
    parts.push(buf.subarray(from, stop));
    return Buffer.concat(parts);
  }

  /** The first whole field: kept (with its rewritten twin) for the fast path, and learnt. */
  private remember(buf: Buffer, at: number, start: number, end: number): void {
    const value = Buffer.from(buf.subarray(start, end));
    this.seenField = Buffer.from(buf.subarray(at, end));
    // The same object when the upstream already says the client's name: `quick` passes it on.
    this.ownField = this.value.equals(value)
      ? this.seenField
      : Buffer.concat([buf.subarray(at, start), this.value]);
    this.learn?.(value);
  }

  /**
   * A chunk with no `"model"` key and no start of one at its end passes as it is; a chunk that
   * holds the remembered field exactly once, whole, is rewritten with one copy. Null: the
   * general path decides.
   */
  protected override quick(chunk: Uint8Array): Uint8Array | null {
    const at = indexOfBytes(chunk, KEY);
    if (at < 0) return endsWithStartOf(chunk, KEY) > 0 ? null : chunk;
    const seen = this.seenField;
    const own = this.ownField;
    if (seen === null || own === null || !bytesAt(chunk, at, seen)) return null;
    const after = at + seen.length;
    if (indexOfBytes(chunk, KEY, after) >= 0 || endsWithStartOf(chunk, KEY) > 0) return null;
    if (seen === own) return chunk;
    const out = Buffer.allocUnsafe(chunk.length - seen.length + own.length);
    copyBytes(chunk, out, 0, 0, at);
    own.copy(out, at);
    copyBytes(chunk, out, at + own.length, after, chunk.length);
    return out;
  }

  /**
   * The value's byte range (quotes included) of a `"model": "…"` field at `at`; null when
   * the key is not a field with a string value; "open" when the chunk ends before it does.
   */
  private field(buf: Buffer, at: number): [number, number] | null | "open" {
    let i = at + KEY.length;
    while (isSpace(buf[i])) i++;
    if (i >= buf.length) return "open";
    if (buf[i] !== COLON) return null;
    i++;
    while (isSpace(buf[i])) i++;
    if (i >= buf.length) return "open";
    if (buf[i] !== QUOTE) return null;
    const start = i;
    for (i++; i < buf.length; i++) {
      const b = buf[i];
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) return [start, i + 1];
    }
    return "open";
  }

  /** How many of the last bytes are the start of `"model"` (held: the next chunk may finish it). */
  private partialKey(buf: Buffer, after: number): number {
    const from = Math.max(after, buf.length - (KEY.length - 1));
    const q = buf.indexOf(QUOTE, from);
    for (let at = q; at >= 0 && at < buf.length; at = buf.indexOf(QUOTE, at + 1)) {
      const tail = buf.subarray(at);
      if (KEY.subarray(0, tail.length).equals(tail)) return tail.length;
    }
    return 0;
  }
}
