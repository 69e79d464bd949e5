/**
 * Cuts the usage-only event out of an OpenAI stream as it passes. qm asks the upstream for
 * `stream_options.include_usage` so that every stream states its token counts (the activity
 * log and `/metrics` read them); a client that did not ask must not get the extra event, whose
 * empty `choices` breaks clients that read `choices[0]` of every chunk.
 *
 * Cheap on the hot path: one native byte search per chunk for `"usage"`; a chunk without a
 * usage object passes as it is (no copy). Only whole events can be judged, so an event cut by
 * a chunk edge is held back until its blank line arrives — the client could not have used half
 * an event anyway — and never more than `MAX_HELD` bytes (past that the bytes go on as they
 * are: no event that long is a usage event). An event is dropped only when its data is a JSON
 * object with `"choices": []` and a `usage` object; any other event, however it looks, passes.
 */
import { indexOfBytes } from "../shared/bytes.ts";
import { HoldingRewrite } from "./holding-rewrite.ts";

const USAGE = Buffer.from('"usage"');
const LF = 0x0a;
const CR = 0x0d;
const MAX_HELD = 65_536;

export class UsageStrip extends HoldingRewrite {
  /** A chunk of whole events without `"usage"` (nearly every one) passes as it is. */
  protected override quick(chunk: Uint8Array): Uint8Array | null {
    const n = chunk.length;
    if (n < 2 || chunk[n - 1] !== LF) return null;
    const b = chunk[n - 2];
    if (b !== LF && !(b === CR && chunk[n - 3] === LF)) return null;
    return indexOfBytes(chunk, USAGE) < 0 ? chunk : null;
  }

  protected rewrite(buf: Buffer, carried: boolean, chunk: Uint8Array): Uint8Array {
    const whole = wholeEventsEnd(buf);
    if (whole < buf.length) {
      if (buf.length - whole > MAX_HELD) return this.strip(buf, buf.length, carried, chunk);
      this.held = Buffer.from(buf.subarray(whole));
    }
    return this.strip(buf, whole, carried, chunk);
  }

  /** `buf[0, stop)` less its usage-only events. */
  private strip(buf: Buffer, stop: number, carried: boolean, chunk: Uint8Array): Uint8Array {
    let at = buf.indexOf(USAGE);
    if (at < 0 || at >= stop) {
      return !carried && stop === buf.length ? chunk : buf.subarray(0, stop);
    }
    const parts: Buffer[] = [];
    let from = 0;
    while (at >= 0 && at < stop) {
      const start = eventStart(buf, at);
      const end = eventEnd(buf, at, stop);
      if (start >= from && isUsageOnly(buf.subarray(start, end))) {
        parts.push(buf.subarray(from, start));
        from = end;
      }
      at = buf.indexOf(USAGE, end);
    }
    if (from === 0) return !carried && stop === buf.length ? chunk : buf.subarray(0, stop);
    parts.push(buf.subarray(from, stop));
    return Buffer.concat(parts);
  }
}

/** The end of the last whole event in `buf` (just past its blank line); 0 when there is none. */
function wholeEventsEnd(buf: Buffer): number {
  for (let i = buf.length - 1; i > 0; i--) {
    if (buf[i] !== LF) continue;
    // "\n\n" or "\n\r\n" ends an event.
    if (buf[i - 1] === LF) return i + 1;
    if (buf[i - 1] === CR && i > 1 && buf[i - 2] === LF) return i + 1;
  }
  return 0;
}

/** Where the event holding byte `at` begins: just past the blank line before it, or 0. */
function eventStart(buf: Buffer, at: number): number {
  for (let i = at - 1; i > 0; i--) {
    if (buf[i] !== LF) continue;
    if (buf[i - 1] === LF) return i + 1;
    if (buf[i - 1] === CR && i > 1 && buf[i - 2] === LF) return i + 1;
  }
  return 0;
}

/** Just past the blank line that ends the event holding byte `at` (at most `stop`). */
function eventEnd(buf: Buffer, at: number, stop: number): number {
  for (let i = buf.indexOf(LF, at); i >= 0 && i < stop; i = buf.indexOf(LF, i + 1)) {
    const next = buf[i + 1];
    if (next === LF) return i + 2;
    if (next === CR && buf[i + 2] === LF) return i + 3;
  }
  return stop;
}

/** An event whose one data line is `{"choices": [], "usage": {…}, …}`. */
function isUsageOnly(event: Buffer): boolean {
  let data = "";
  for (const line of event.toString("utf8").split(/\r?\n/)) {
    if (line.startsWith("data:")) data += line.slice(line[5] === " " ? 6 : 5);
  }
  if (data === "") return false;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return false;
  }
  if (typeof value !== "object" || value === null) return false;
  const v = value as { choices?: unknown; usage?: unknown };
  return (
    Array.isArray(v.choices) &&
    v.choices.length === 0 &&
    typeof v.usage === "object" &&
    v.usage !== null
  );
}
