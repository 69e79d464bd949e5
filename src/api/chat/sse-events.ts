/**
 * SSE framing of the upstream's body, on bytes (WHATWG HTML §9.2.6): LF, CRLF or CR line ends,
 * a leading byte order mark, `:` comments, `data` lines joined by "\n", `event`, one event per
 * blank line; an event still open when the body ends is dropped.
 *
 * Bytes rather than text, for memory: each chunk's complete lines are decoded in one go, and
 * the unfinished line after them waits as the chunks' own bytes — no string fragments to join
 * later, no line copied once per chunk. A `data:` line that grows past `bigLineBytes` before
 * it ends (one delta of megabytes) is not held at all: its bytes go to a `BigLine` as they
 * come, and what that returns at the line's end stands for the line. Any other line (a
 * comment, `event:`, a field nobody reads) that grows past `MAX_OTHER_LINE_BYTES` is dropped as
 * it comes: no upstream can make qm hold a line that means nothing to it.
 *
 * Nothing is held without bound: what one event keeps (its data lines so far, the line being
 * read, what a `BigLine` keeps) past `maxEventBytes` ends the framing (`onOverflow`, once);
 * what comes after is not read.
 */

export interface BigLine {
  feed(bytes: Uint8Array): void;
  /** The line ended: the value to use for it. */
  end(): string;
  /** The bytes it keeps so far (what it does not hand on as they come). */
  readonly held: number;
}

export interface SseEventsOptions {
  onEvent(data: string, name: string | undefined): void;
  /**
   * Each comment line's text (after the colon and one optional space), in order with the
   * events; unset, comments are dropped with no work at all.
   */
  onComment?: ((text: string) => void) | undefined;
  /** A data line longer than this, the first of its event, goes to `bigLine()`. */
  bigLineBytes: number;
  bigLine: () => BigLine;
  /** The most one event may hold (`MAX_EVENT_BYTES` unless a test asks for less). */
  maxEventBytes?: number | undefined;
  /** One event grew past `maxEventBytes`: nothing more is framed. */
  onOverflow?: (() => void) | undefined;
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const DATA = Buffer.from("data:");
/** The longest line that is not `data:` kept whole; longer ones are skipped to their end. */
export const MAX_OTHER_LINE_BYTES = 64 * 1024;
/**
 * The most one event may hold, in bytes (UTF-16 units for its decoded data lines): far past
 * any real chunk (a whole answer's tool arguments in one), and bounded.
 */
export const MAX_EVENT_BYTES = 64 * 1024 * 1024;

export class SseEvents {
  private readonly decoder = new TextDecoder();
  /** The bytes of the unfinished line. */
  private carry: Uint8Array[] = [];
  private carryLen = 0;
  private big: BigLine | null = null;
  /** Inside a line too long to mean anything (not `data:`): skipped to its end. */
  private dropping = false;
  /** The event's data lines so far, joined by "\n"; `lines` counts them. */
  private data = "";
  private dataLines = 0;
  private name: string | undefined;
  /** The previous chunk ended in CR: an LF starting this one ends the same line. */
  private skipLf = false;
  private started = false;
  /** An event grew past `maxEventBytes`: nothing more is read. */
  private over = false;
  private readonly maxEvent: number;

  constructor(private readonly opts: SseEventsOptions) {
    this.maxEvent = opts.maxEventBytes ?? MAX_EVENT_BYTES;
  }

  feed(c: Uint8Array): void {
    const n = c.length;
    let i = 0;
    if (n === 0 || this.over) return;
    if (!this.started) {
      this.started = true;
      if (c[0] === 0xef && c[1] === 0xbb && c[2] === 0xbf) i = 3;
    }
    if (this.skipLf) {
      this.skipLf = false;
      if (c[i] === LF) i++;
    }
    if (this.dropping) {
      const e = lineEnd(c, i);
      if (e === -1) return;
      this.dropping = false;
      i = e + (c[e] === CR && c[e + 1] === LF ? 2 : 1);
      if (c[e] === CR && e + 1 === n) this.skipLf = true;
      if (i >= n) return;
    }
    if (this.big) {
      const lf = c.indexOf(LF, i);
      const cr = c.indexOf(CR, i);
      const e = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (e === -1) {
        this.big.feed(c.subarray(i));
        if (this.big.held + this.data.length > this.maxEvent) this.overflow();
        return;
      }
      this.big.feed(c.subarray(i, e));
      const line = this.big.end();
      this.big = null;
      this.addData(line);
      if (this.over) return;
      // Past the line's terminator: CR, LF or CRLF.
      i = e + (c[e] === CR && c[e + 1] === LF ? 2 : 1);
      if (c[e] === CR && e + 1 === n) this.skipLf = true;
      if (i >= n) return;
    }
    // Chunks mostly end with an event's blank line: no search then.
    const last = c[n - 1] === LF ? n - 1 : Math.max(c.lastIndexOf(LF), c.lastIndexOf(CR));
    if (last < i) {
      this.hold(c.subarray(i));
      return;
    }
    const lines = i === 0 && last === n - 1 ? c : c.subarray(i, last + 1);
    const head = this.carryLen > 0 ? Buffer.concat([...this.carry, lines]) : lines;
    this.carry = [];
    this.carryLen = 0;
    if (c[last] === CR && last + 1 === n) this.skipLf = true;
    this.lines(this.decoder.decode(head));
    if (last + 1 < n && !this.over) this.hold(c.subarray(last + 1));
  }

  /** The body ended: an event without its blank line is dropped, as the spec says. */
  end(): void {
    this.dropping = false;
    this.big?.end();
    this.big = null;
    this.carry = [];
    this.carryLen = 0;
    this.data = "";
    this.dataLines = 0;
  }

  private hold(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.carry.push(bytes);
    this.carryLen += bytes.length;
    if (this.carryLen <= Math.min(this.opts.bigLineBytes, MAX_OTHER_LINE_BYTES)) return;
    if (this.carryLen + this.data.length > this.maxEvent) {
      this.overflow();
      return;
    }
    // Only the line's first bytes say what it is: they are read in place, nothing copied.
    if (!beginsWithData(this.carry)) {
      if (this.carryLen > MAX_OTHER_LINE_BYTES) {
        this.carry = [];
        this.carryLen = 0;
        this.dropping = true;
      }
      return;
    }
    if (this.carryLen <= this.opts.bigLineBytes || this.dataLines > 0) return;
    const line = Buffer.concat(this.carry);
    this.carry = [];
    this.carryLen = 0;
    this.big = this.opts.bigLine();
    this.big.feed(line.subarray(line[DATA.length] === SPACE ? DATA.length + 1 : DATA.length));
  }

  /** Complete lines, each with its terminator. */
  private lines(text: string): void {
    if (text.indexOf("\r") === -1) {
      // The common case, without a line array: data lines are sliced straight out.
      let start = 0;
      for (let lf = text.indexOf("\n"); lf !== -1; lf = text.indexOf("\n", start)) {
        if (lf === start) this.dispatch();
        else if (text.startsWith("data:", start)) {
          const v = start + (text.charCodeAt(start + 5) === SPACE ? 6 : 5);
          this.addData(text.slice(v, lf));
        } else this.line(text.slice(start, lf));
        start = lf + 1;
      }
      return;
    }
    const all = text.split(/\r\n|\r|\n/);
    for (let k = 0; k < all.length - 1; k++) this.line(all[k] as string);
  }

  private addData(value: string): void {
    this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
    this.dataLines++;
    if (this.data.length > this.maxEvent) this.overflow();
  }

  /** The event is too big to hold: everything is let go, and nothing more is read. */
  private overflow(): void {
    if (this.over) return;
    this.end();
    this.over = true;
    this.opts.onOverflow?.();
  }

  private dispatch(): void {
    if (this.over) return;
    if (this.dataLines > 0) this.opts.onEvent(this.data, this.name);
    this.data = "";
    this.dataLines = 0;
    this.name = undefined;
  }

  private line(l: string): void {
    if (this.over) return;
    if (l === "") {
      this.dispatch();
      return;
    }
    if (l.charCodeAt(0) === 58) {
      // A comment.
      this.opts.onComment?.(l.slice(l.charCodeAt(1) === SPACE ? 2 : 1));
      return;
    }
    const colon = l.indexOf(":");
    const field = colon === -1 ? l : l.slice(0, colon);
    const value = colon === -1 ? "" : l.slice(colon + (l.charCodeAt(colon + 1) === SPACE ? 2 : 1));
    if (field === "data") this.addData(value);
    else if (field === "event") this.name = value === "" ? undefined : value;
  }
}

/** The held pieces of a line begin with `data:` (the pieces hold more than its 5 bytes). */
function beginsWithData(pieces: readonly Uint8Array[]): boolean {
  let k = 0;
  for (const p of pieces) {
    for (let j = 0; j < p.length; j++) {
      if (p[j] !== DATA[k]) return false;
      if (++k === DATA.length) return true;
    }
  }
  return false;
}

/** The first line end (CR or LF) at or after `from`, or -1. */
function lineEnd(c: Uint8Array, from: number): number {
  const lf = c.indexOf(LF, from);
  const cr = c.indexOf(CR, from);
  return lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
}
