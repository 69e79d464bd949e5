/**
 * Reads an answer's own figures off its bytes as they are relayed, without buffering or parsing
 * the answer: one native search per key and chunk for `"usage"`, `"timings"`,
 * `"finish_reason"` and `"stop_reason"`; only a hit's value — a small object or a short string —
 * is decoded. A JSON string never holds an unescaped `"`, so text inside the answer (content,
 * tool arguments) cannot look like a key. A key or value split across chunks is carried to the
 * next chunk: the last bytes of each chunk (a key cut in two), or the value begun (bounded).
 */
import type { AnswerFigures } from "./figures.ts";

enum Key {
  Usage = 0,
  Timings = 1,
  Finish = 2,
  Stop = 3,
}

const NEEDLES = ['"usage"', '"timings"', '"finish_reason"', '"stop_reason"'].map((s) =>
  Buffer.from(s),
);
const KEYS = NEEDLES.length;
/** Enough of a chunk's end to hold any key but its last byte. */
const CARRY = Math.max(...NEEDLES.map((n) => n.length)) - 1;
/** A value still open past this many bytes is not a usage object: it is dropped. */
const MAX_VALUE = 4096;

/** Where each key is next found in the chunk being scanned. */
const NEXT = new Int32Array(KEYS);

const COLON = 0x3a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

export class AnswerScan {
  /** The last bytes of the previous chunk (a key may start there). */
  private tail: Buffer | null = null;
  /** A key whose value had not ended with its chunk, and what followed it. */
  private open: Buffer | null = null;

  constructor(private readonly figures: AnswerFigures) {}

  feed(chunk: Uint8Array): void {
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    /** What came before `buf` that a key may have begun in. */
    let before = this.tail;
    this.tail = null;
    if (this.open) {
      buf = Buffer.concat([this.open, buf]);
      this.open = null;
      before = null;
    } else if (before) {
      const seam = Buffer.concat([before, buf.subarray(0, CARRY)]);
      let from = -1;
      for (const needle of NEEDLES) {
        const at = seam.indexOf(needle);
        if (at >= 0 && at < before.length && (from < 0 || at < from)) from = at;
      }
      // A key cut in two: rare, so the chunk is copied behind its start only then.
      if (from >= 0) {
        buf = Buffer.concat([before.subarray(from), buf]);
        before = null;
      }
    }
    if (!this.scan(buf)) return;
    // Still no value open: keep the last bytes, for a key that starts there.
    this.tail =
      buf.length >= CARRY || !before
        ? Buffer.from(buf.subarray(Math.max(0, buf.length - CARRY)))
        : Buffer.concat([before, buf]).subarray(-CARRY);
  }

  /** Reads every figure in `buf`; false when one is left open (kept for the next chunk). */
  private scan(buf: Buffer): boolean {
    // Scans never interleave (each runs to its end synchronously): one scratch array for all.
    const next = NEXT;
    for (let k = 0; k < KEYS; k++) next[k] = buf.indexOf(NEEDLES[k]!);
    let from = 0;
    for (;;) {
      let at = -1;
      let key = -1;
      for (let k = 0; k < KEYS; k++) {
        let i = next[k]!;
        if (i >= 0 && i < from) {
          i = buf.indexOf(NEEDLES[k]!, from);
          next[k] = i;
        }
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
          key = k;
        }
      }
      if (at < 0) break;
      const end = this.value(buf, at + NEEDLES[key]!.length, key);
      if (end < 0) {
        if (buf.length - at <= MAX_VALUE) {
          this.open = Buffer.from(buf.subarray(at));
          return false;
        }
        return true;
      }
      from = end;
    }
    return true;
  }

  /** Reads the value after a key at `i`; returns where reading may go on, or -1: not ended yet. */
  private value(buf: Buffer, i: number, key: Key): number {
    const n = buf.length;
    while (i < n && isSpace(buf[i]!)) i++;
    if (i >= n) return -1;
    if (buf[i] !== COLON) return i;
    i++;
    while (i < n && isSpace(buf[i]!)) i++;
    if (i >= n) return -1;
    if (key === Key.Finish || key === Key.Stop) {
      if (buf[i] !== QUOTE) return i;
      const close = buf.indexOf(QUOTE, i + 1);
      if (close < 0) return -1;
      this.figures.finish(buf.toString("latin1", i + 1, close));
      return close + 1;
    }
    if (buf[i] !== OPEN) return i;
    const end = objectEnd(buf, i);
    if (end < 0) return -1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(buf.toString("utf8", i, end));
    } catch {
      return end;
    }
    if (key === Key.Usage) this.figures.usage(parsed);
    else this.figures.timings(parsed);
    return end;
  }
}

/** The end (exclusive) of the JSON object that opens at `start`, or -1 if it is not closed yet. */
function objectEnd(buf: Buffer, start: number): number {
  let depth = 0;
  let inString = false;
  const limit = Math.min(buf.length, start + MAX_VALUE);
  for (let i = start; i < limit; i++) {
    const b = buf[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN) depth++;
    else if (b === CLOSE && --depth === 0) return i + 1;
  }
  // Past the bound: not a figure worth keeping; reading goes on after it.
  return limit < buf.length ? limit : -1;
}
