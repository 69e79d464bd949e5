/**
 * Watches an OpenAI SSE body as it is relayed, so that a broken stream never reaches the
 * client as a clean end: a `data:` payload that is not JSON (nor `[DONE]`), a body that stops
 * mid-event (bytes after the last blank line), or a chat/completions stream that ends without
 * `data: [DONE]`. The relay then ends the stream with an error event instead.
 *
 * It is on the hot path of every streamed token, so it neither buffers nor decodes: lines are
 * found with native byte searches, and a payload is judged by its first and last non-blank
 * bytes (`{…}` or `[…]`). That catches what servers really send when they break — plain-text
 * errors, tracebacks, HTML, empty or cut-off payloads — without parsing each event twice; a
 * payload with a bad byte in its middle is left to the client's own parser. Framing follows
 * the SSE spec (WHATWG HTML §9.2.6): LF, CRLF or CR line ends; an event ends at a blank line.
 */
const LF = 10;
const CR = 13;
const DATA = [100, 97, 116, 97, 58]; // "data:"
const DONE = [91, 68, 79, 78, 69, 93]; // "[DONE]"

const blank = (b: number) => b === 32 || b === 9 || b === LF || b === CR;
const opens = (b: number) => b === 123 || b === 91; // { [
const closes = (b: number) => b === 125 || b === 93; // } ]

export class SseCheck {
  /** Bytes of "data:" matched at the start of the current line; -1: not a data line. */
  private prefix = 0;
  private lineLen = 0;
  /** The current event has a data line. */
  private hasData = false;
  /** First and last non-blank payload bytes of the current event (-1: none yet). */
  private first = -1;
  private last = -1;
  /** Non-blank payload bytes of the event matched against `[DONE]`; -1: something else. */
  private done = 0;
  /** The previous chunk ended in CR: an LF starting this one ends the same line. */
  private skipLf = false;
  private started = false;
  private sawDone = false;

  /** `requireDone`: the stream must end with `data: [DONE]` (chat and text completions). */
  constructor(private readonly requireDone: boolean) {}

  /**
   * Takes the next chunk; returns what is wrong with the stream, and how many of the chunk's
   * bytes precede the problem (through the event that shows it), or null.
   */
  feed(c: Uint8Array): { problem: string; keep: number } | null {
    let i = 0;
    if (!this.started) {
      this.started = c.length > 0;
      // A UTF-8 byte order mark may open a stream (the spec strips it).
      if (c[0] === 0xef && c[1] === 0xbb && c[2] === 0xbf) i = 3;
    }
    if (this.skipLf) {
      this.skipLf = false;
      if (c[i] === LF) i++;
    }
    const n = c.length;
    let cr = c.indexOf(CR, i);
    while (i < n) {
      const lf = c.indexOf(LF, i);
      if (cr !== -1 && cr < i) cr = c.indexOf(CR, i);
      let e = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if ((e === -1 ? n : e) > i) this.segment(c, i, e === -1 ? n : e);
      if (e === -1) break;
      if (c[e] === CR) {
        if (e + 1 === n) this.skipLf = true;
        else if (c[e + 1] === LF) e++;
      }
      const problem = this.lineEnd();
      if (problem) return { problem, keep: e + 1 };
      i = e + 1;
    }
    return null;
  }

  /** The body ended; returns what is wrong with how, or null. */
  end(): string | null {
    if (this.lineLen > 0 || this.hasData) return "stream ended unexpectedly (mid-event)";
    if (this.requireDone && !this.sawDone) return "stream ended unexpectedly (no data: [DONE])";
    return null;
  }

  /** Bytes `[s, e)` of the current line (a line may come in several pieces). */
  private segment(c: Uint8Array, s: number, e: number): void {
    this.lineLen += e - s;
    let k = s;
    while (this.prefix >= 0 && this.prefix < 5 && k < e) {
      if (c[k] !== DATA[this.prefix]) this.prefix = -1;
      else {
        this.prefix++;
        k++;
      }
    }
    if (this.prefix !== 5 || k === e) return;
    if (this.first === -1) {
      let j = k;
      while (j < e && blank(c[j] as number)) j++;
      if (j < e) this.first = c[j] as number;
    }
    let j = e - 1;
    while (j >= k && blank(c[j] as number)) j--;
    if (j >= k) this.last = c[j] as number;
    // Any other payload differs from `[DONE]` within its first non-blank bytes.
    for (let m = k; m < e && this.done >= 0; m++) {
      const b = c[m] as number;
      if (!blank(b))
        this.done = this.done < DONE.length && b === DONE[this.done] ? this.done + 1 : -1;
    }
  }

  private lineEnd(): string | null {
    const empty = this.lineLen === 0;
    if (this.prefix === 5) this.hasData = true;
    this.prefix = 0;
    this.lineLen = 0;
    if (!empty || !this.hasData) return null;
    // A blank line dispatches the event.
    const done = this.done === DONE.length;
    const json = opens(this.first) && closes(this.last);
    this.hasData = false;
    this.first = -1;
    this.last = -1;
    this.done = 0;
    if (done) this.sawDone = true;
    else if (!json) return "sent an event that is not JSON";
    return null;
  }
}
