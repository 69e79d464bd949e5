/**
 * Anthropic's `stop_sequences`, applied by qm to the answer's text: the answer ends just before
 * the first stop sequence the text completes, and says which (`stop_reason: "stop_sequence"`,
 * `stop_sequence`). OpenAI servers apply `stop` themselves but never say which string matched
 * (and drop it from the text), so qm does not send them upstream and matches them itself —
 * exact on every server.
 *
 * Streaming: text goes out as it comes except the last `longest − 1` characters, which are held
 * back until the next text shows they start no stop sequence (a surrogate pair is never split).
 * A match ends the message; the caller stops the upstream. Only text counts: thinking and
 * tool-call arguments are never cut.
 */
export class StopMatcher {
  private held = "";
  private readonly keep: number;
  /** The stop sequence the text completed, once it has. */
  matched: string | null = null;

  constructor(private readonly stops: readonly string[]) {
    this.keep = Math.max(0, ...stops.map((s) => s.length)) - 1;
  }

  /** More text: what may go out now. After a match, the text before it, and `matched` is set. */
  push(text: string): string {
    if (this.matched !== null) return "";
    const buf = this.held + text;
    const hit = firstMatch(buf, this.stops);
    if (hit) {
      this.matched = hit.stop;
      this.held = "";
      return buf.slice(0, hit.at);
    }
    let cut = Math.max(0, buf.length - this.keep);
    if (cut > 0 && cut < buf.length && isHighSurrogate(buf.charCodeAt(cut - 1))) cut--;
    this.held = buf.slice(cut);
    return buf.slice(0, cut);
  }

  /** The text still held back, at the end of the answer. */
  flush(): string {
    const held = this.held;
    this.held = "";
    return held;
  }
}

/**
 * The stop sequence `text` completes first — the one that ends earliest, the longer on a tie
 * (as a server checking after every token would find it) — and where it starts.
 */
export function firstMatch(
  text: string,
  stops: readonly string[],
): { stop: string; at: number } | null {
  let best: { stop: string; at: number; end: number } | null = null;
  for (const stop of stops) {
    if (stop === "") continue;
    const at = text.indexOf(stop);
    if (at < 0) continue;
    const end = at + stop.length;
    if (!best || end < best.end || (end === best.end && stop.length > best.stop.length)) {
      best = { stop, at, end };
    }
  }
  return best && { stop: best.stop, at: best.at };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
