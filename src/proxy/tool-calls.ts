/**
 * Watches an OpenAI chat response as it streams through — SSE or a plain JSON body — for
 * `"finish_reason": "tool_calls"` (https://platform.openai.com/docs/api-reference/chat/object),
 * without buffering it: the agent-loop hold is granted only to responses that end this way.
 *
 * Cheap on the hot path: one native byte search per chunk, in place; only a hit is decoded,
 * and only the few bytes before it. The last few bytes of each chunk are kept so a match
 * split across chunks is still found.
 */
const NEEDLE = Buffer.from('"tool_calls"');
/** Enough room for `"finish_reason"` plus generous whitespace before the needle. */
const LOOK_BACK = 48;
const CARRY = LOOK_BACK + NEEDLE.length;
const FINISH = /"finish_reason"\s*:\s*$/;

export class ToolCallWatcher {
  private carry: Buffer = Buffer.alloc(0);
  private found = false;

  get sawToolCalls(): boolean {
    return this.found;
  }

  feed(chunk: Uint8Array): void {
    if (this.found) return;
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.carry.length > 0) {
      // Matches that start in the carried tail: search the tail plus the chunk's first bytes.
      const seam = Buffer.concat([this.carry, buf.subarray(0, NEEDLE.length - 1)]);
      if (this.scan(seam, this.carry.length - NEEDLE.length + 1)) return;
    }
    if (this.scan(buf, 0, this.carry)) return;
    this.carry =
      buf.length >= CARRY
        ? Buffer.from(buf.subarray(buf.length - CARRY))
        : Buffer.concat([this.carry, buf]).subarray(-CARRY);
  }

  /** Looks for the needle at or after `from`; `before` supplies look-back across the seam. */
  private scan(buf: Buffer, from: number, before?: Buffer): boolean {
    for (
      let at = buf.indexOf(NEEDLE, Math.max(0, from));
      at >= 0;
      at = buf.indexOf(NEEDLE, at + 1)
    ) {
      let back = buf.subarray(Math.max(0, at - LOOK_BACK), at);
      if (at < LOOK_BACK && before && before.length > 0) {
        back = Buffer.concat([before.subarray(-(LOOK_BACK - at)), back]);
      }
      if (FINISH.test(back.toString("latin1"))) {
        this.found = true;
        return true;
      }
    }
    return false;
  }
}
