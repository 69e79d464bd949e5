/**
 * Reads an answer's own usage and finish reason off its bytes as they are relayed, without buffering or parsing
 * the answer: each chunk is read as latin1 (one character per byte, so positions are byte
 * offsets; the keys are ASCII), then one string search per key for `"usage"`, `"timings"`,
 * `"finish_reason"` and `"stop_reason"`; only a hit's value — a small object or a short string —
 * is decoded. A JSON string never holds an unescaped `"`, so text inside the answer (content,
 * tool arguments) cannot look like a key. A key or value split across chunks is carried to the
 * next chunk: the last characters of each chunk (a key cut in two), or the value begun
 * (bounded).
 */
import type { AnswerUsage } from "./answer-usage.ts";

const USAGE = 0;
const TIMINGS = 1;
const FINISH = 2;
const STOP = 3;

const NEEDLES = ['"usage"', '"timings"', '"finish_reason"', '"stop_reason"'];
const KEYS = NEEDLES.length;
/** Enough of a chunk's end to hold any key but its last character. */
const CARRY = Math.max(...NEEDLES.map((n) => n.length)) - 1;
/** A value still open past this many bytes is not a usage object: it is dropped. */
const MAX_VALUE = 4096;

/** WHATWG's "latin1" (windows-1252): still one UTF-16 unit per byte. Cheaper than a Buffer. */
const latin1 = new TextDecoder("latin1");

/** Where each key is next found in the text being scanned; scans never interleave. */
const NEXT = new Int32Array(KEYS);

const COLON = 0x3a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

export class AnswerScan {
  /** The last characters of the previous chunk (a key may start there). */
  private tail = "";
  /** A key whose value had not ended with its chunk, and what followed it. */
  private open = "";

  constructor(private readonly usage: AnswerUsage) {}

  feed(chunk: Uint8Array): void {
    let text = latin1.decode(chunk);
    /** What came before `text` that a key may have begun in. */
    let before = this.tail;
    this.tail = "";
    if (this.open !== "") {
      text = this.open + text;
      this.open = "";
      before = "";
    } else if (before !== "") {
      const seam = before + text.slice(0, CARRY);
      let from = -1;
      for (const needle of NEEDLES) {
        const at = seam.indexOf(needle);
        if (at >= 0 && at < before.length && (from < 0 || at < from)) from = at;
      }
      // A key cut in two: the text is read again from its start.
      if (from >= 0) {
        text = before.slice(from) + text;
        before = "";
      }
    }
    if (!this.scan(text)) return;
    // Still no value open: keep the last characters, for a key that starts there.
    this.tail =
      text.length >= CARRY || before === "" ? text.slice(-CARRY) : (before + text).slice(-CARRY);
  }

  /** Reads every figure in `text`; false when one is left open (kept for the next chunk). */
  private scan(text: string): boolean {
    const next = NEXT;
    for (let k = 0; k < KEYS; k++) next[k] = text.indexOf(NEEDLES[k]!);
    let from = 0;
    for (;;) {
      let at = -1;
      let key = -1;
      for (let k = 0; k < KEYS; k++) {
        let i = next[k]!;
        if (i >= 0 && i < from) {
          i = text.indexOf(NEEDLES[k]!, from);
          next[k] = i;
        }
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
          key = k;
        }
      }
      if (at < 0) return true;
      const end = this.value(text, at + NEEDLES[key]!.length, key);
      if (end < 0) {
        if (text.length - at > MAX_VALUE) return true;
        this.open = text.slice(at);
        return false;
      }
      from = end;
    }
  }

  /** Reads the value after a key at `i`; returns where reading may go on, or -1: not ended yet. */
  private value(text: string, i: number, key: number): number {
    const n = text.length;
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    if (i >= n) return -1;
    if (text.charCodeAt(i) !== COLON) return i;
    i++;
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    if (i >= n) return -1;
    const c = text.charCodeAt(i);
    if (key === FINISH || key === STOP) {
      if (c !== QUOTE) return i;
      const close = text.indexOf('"', i + 1);
      if (close < 0) return -1;
      this.usage.readFinishReason(text.slice(i + 1, close));
      return close + 1;
    }
    if (c !== OPEN) return i;
    const end = objectEnd(text, i);
    if (end < 0) return -1;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.slice(i, end));
    } catch {
      return end;
    }
    if (key === USAGE) this.usage.readUsage(parsed);
    else if (key === TIMINGS) this.usage.readTimings(parsed);
    return end;
  }
}

/** The end (exclusive) of the JSON object that opens at `start`, or -1 if it is not closed yet. */
function objectEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  const limit = Math.min(text.length, start + MAX_VALUE);
  for (let i = start; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN) depth++;
    else if (c === CLOSE && --depth === 0) return i + 1;
  }
  // Past the bound: not a value worth keeping; reading goes on after it.
  return limit < text.length ? limit : -1;
}
