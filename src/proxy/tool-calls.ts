/**
 * Watches an OpenAI chat response as it streams through — SSE or a plain JSON body — for
 * `"finish_reason": "tool_calls"` (https://platform.openai.com/docs/api-reference/chat/object),
 * without buffering it: the agent-loop hold is granted only to responses that end this way.
 *
 * Cheap on the hot path: one native byte search per chunk for `"tool_calls"`; only a hit is
 * decoded, and only the few bytes before it. A short tail of each chunk is carried over so a
 * match split across chunk boundaries is still found.
 */
const NEEDLE = new TextEncoder().encode('"tool_calls"');
/** Enough room for `"finish_reason"` plus generous whitespace before the needle. */
const LOOK_BACK = 48;
const CARRY = LOOK_BACK + NEEDLE.length;
const FINISH = /"finish_reason"\s*:\s*$/;
const decoder = new TextDecoder();

export class ToolCallWatcher {
  private carry: Uint8Array = new Uint8Array(0);
  private found = false;

  get sawToolCalls(): boolean {
    return this.found;
  }

  feed(chunk: Uint8Array): void {
    if (this.found) return;
    const buf = this.carry.length ? concat(this.carry, chunk) : chunk;
    const view = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    for (let at = view.indexOf(NEEDLE); at >= 0; at = view.indexOf(NEEDLE, at + 1)) {
      const before = decoder.decode(buf.subarray(Math.max(0, at - LOOK_BACK), at));
      if (FINISH.test(before)) {
        this.found = true;
        return;
      }
    }
    this.carry = buf.slice(Math.max(0, buf.length - CARRY));
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
