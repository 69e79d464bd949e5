/**
 * One chunk too big to hold: a single SSE `data:` line of megabytes (a model that writes a whole
 * file as one delta). Taken whole, such a line is held several times over at once — its bytes,
 * the decoded string, the parsed text, the text re-escaped for the output, the output's bytes.
 * So its bytes are scanned as they arrive instead: the text of `choices[0].delta.content`,
 * `.reasoning_content` and `.reasoning` is handed on piece by piece still JSON-escaped (it goes
 * out inside a JSON string again, so the escapes are reused as they are), and everything else
 * is kept as a "skeleton" — the same chunk with those strings emptied — which the translator
 * then reads like any other chunk (finish_reason, usage, tool calls).
 *
 * Pieces are cut only where a JSON string may be cut: never inside an escape (`\n`, `\u00e9`),
 * never between the two halves of an escaped surrogate pair, never inside a UTF-8 sequence (a
 * streaming TextDecoder holds those bytes back). Pure: bytes in, strings out.
 */

export type DeltaKind = "text" | "thinking";

/** The fields of `choices[0].delta` whose strings are streamed, and the block each feeds. */
const STREAMED: Record<string, DeltaKind> = {
  content: "text",
  reasoning_content: "thinking",
  reasoning: "thinking",
};

const QUOTE = 34;
const BACKSLASH = 92;
const U = 117;
/** Keys longer than this are none of the keys above; their bytes are not collected. */
const MAX_KEY = 32;

interface Frame {
  obj: boolean;
  /** The key whose value is being read (objects). */
  key: string | null;
  /** The element being read (arrays). */
  index: number;
}

export class DeltaScanner {
  private readonly stack: Frame[] = [];
  private readonly skeleton: Uint8Array[] = [];
  /** The next string in the current object is a key. */
  private expectKey = false;
  private inString = false;
  private isKey = false;
  private key = "";
  /** The kind of the string being streamed, or null when it is kept in the skeleton. */
  private streamed: DeltaKind | null = null;
  /** Decodes streamed bytes; a decode that closes a string also resets it. */
  private readonly decoder = new TextDecoder();
  /** The start of an escape cut off by the end of the previous chunk. */
  private cut: Uint8Array | null = null;
  /** Bytes kept in the skeleton so far. */
  private kept = 0;

  constructor(private readonly onText: (kind: DeltaKind, escaped: string) => void) {}

  /** The next bytes of the line's payload (after `data:`). */
  feed(bytes: Uint8Array): void {
    let c = bytes;
    if (this.cut) {
      c = concat([this.cut, c]);
      this.cut = null;
    }
    const n = c.length;
    /** Where the current run of skeleton bytes began; -1 while a streamed string is read. */
    let run = this.streamed ? -1 : 0;
    let i = 0;
    while (i < n) {
      if (this.inString) {
        const end = this.stringPart(c, i);
        if (end < 0) {
          // Cut off mid-escape: those bytes wait for the rest (kept or streamed alike).
          const at = -end - 1;
          if (run >= 0) this.keep(c.subarray(run, at));
          this.cut = c.slice(at);
          return;
        }
        if (end === n) break;
        // `end` is the closing quote.
        if (this.streamed) {
          this.streamed = null;
          run = end;
        }
        this.inString = false;
        i = end + 1;
        continue;
      }
      const b = c[i] as number;
      if (b === QUOTE) {
        this.inString = true;
        this.isKey = this.expectKey;
        this.key = "";
        this.streamed = this.isKey ? null : this.kindHere();
        if (this.streamed) {
          this.keep(c.subarray(run, i + 1));
          run = -1;
        }
      } else if (b === 123 || b === 91) {
        // { [
        this.stack.push({ obj: b === 123, key: null, index: 0 });
        this.expectKey = b === 123;
      } else if (b === 125 || b === 93) {
        // } ]
        this.stack.pop();
        this.expectKey = false;
      } else if (b === 44) {
        // ,
        const top = this.stack.at(-1);
        if (top?.obj) this.expectKey = true;
        else if (top) top.index++;
      } else if (b === 58) {
        // :
        this.expectKey = false;
      }
      i++;
    }
    if (run >= 0) this.keep(c.subarray(run));
  }

  /** The bytes kept so far: the skeleton, and an escape cut off at a chunk's end. */
  get held(): number {
    return this.kept + (this.cut?.length ?? 0);
  }

  private keep(bytes: Uint8Array): void {
    this.skeleton.push(bytes);
    this.kept += bytes.length;
  }

  /** The line ended: the chunk with the streamed strings emptied, as JSON text. */
  end(): string {
    if (this.cut) this.keep(this.cut);
    return new TextDecoder().decode(concat(this.skeleton));
  }

  /**
   * Reads string bytes from `i`: returns the index of the closing quote, `n` when the string
   * goes on past this chunk, or `-(at + 1)` when an escape starting at `at` is cut off.
   * Streamed strings hand their bytes on; key strings remember theirs.
   */
  private stringPart(c: Uint8Array, i: number): number {
    const n = c.length;
    let j = i;
    let backslash = c.indexOf(BACKSLASH, i);
    /** Start of the last escape read when it is the high half of a surrogate pair. */
    let high = -1;
    for (;;) {
      const quote = c.indexOf(QUOTE, j);
      if (backslash !== -1 && backslash < j) backslash = c.indexOf(BACKSLASH, j);
      if (backslash !== -1 && (quote === -1 || backslash < quote)) {
        const len = c[backslash + 1] === U ? 6 : 2;
        if (backslash + len > n) {
          // Cut off mid-escape; a high surrogate just before it waits with it for its partner.
          const at = high !== -1 && high + 6 === backslash && this.streamed ? high : backslash;
          this.take(c, i, at, false);
          return -(at + 1);
        }
        high = len === 6 && isHighSurrogate(c, backslash) ? backslash : -1;
        j = backslash + len;
        continue;
      }
      if (quote === -1) {
        // The string goes on. A high surrogate at the very end waits for its low half.
        if (high !== -1 && high + 6 === n && this.streamed) {
          this.take(c, i, high, false);
          return -(high + 1);
        }
        this.take(c, i, n, false);
        return n;
      }
      this.take(c, i, quote, true);
      return quote;
    }
  }

  /** String bytes `[s, e)`; `closed` when the string ends at `e`. */
  private take(c: Uint8Array, s: number, e: number, closed: boolean): void {
    if (this.streamed) {
      let text = this.decoder.decode(c.subarray(s, e), { stream: !closed });
      // A raw control character is invalid inside a JSON string: escape it on the way out.
      if (CONTROL.test(text)) text = text.replace(CONTROL_ALL, escapeControl);
      if (text !== "") this.onText(this.streamed, text);
      return;
    }
    if (!this.isKey) return;
    if (this.key.length <= MAX_KEY) {
      for (let k = s; k < e && this.key.length <= MAX_KEY; k++) {
        this.key += String.fromCharCode(c[k] as number);
      }
    }
    const top = this.stack.at(-1);
    if (closed && top) top.key = this.key;
  }

  /** Where a streamed string may start: `choices[0].delta.<one of STREAMED>`. */
  private kindHere(): DeltaKind | null {
    const s = this.stack;
    if (s.length !== 4) return null;
    const [root, choices, choice, delta] = s as [Frame, Frame, Frame, Frame];
    const path =
      root.obj &&
      root.key === "choices" &&
      !choices.obj &&
      choices.index === 0 &&
      choice.obj &&
      choice.key === "delta" &&
      delta.obj;
    return path ? (STREAMED[delta.key ?? ""] ?? null) : null;
  }
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_ALL = /[\u0000-\u001f]/g;
const escapeControl = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** `\uD800`–`\uDBFF` at `at` (the backslash). */
function isHighSurrogate(c: Uint8Array, at: number): boolean {
  const d = c[at + 2];
  const x = c[at + 3];
  if (d !== 100 && d !== 68) return false; // d D
  // 8 9 a b A B
  return x === 56 || x === 57 || x === 97 || x === 98 || x === 65 || x === 66;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
