/**
 * Watches an answer's bytes as they pass — SSE or a plain JSON body — for how it ended, without
 * buffering or parsing it: `"finish_reason": "tool_calls"` in an OpenAI chat answer
 * (https://platform.openai.com/docs/api-reference/chat/object), `"stop_reason": "tool_use"` in
 * an Anthropic one (a JSON message or its `message_delta` event). The agent-loop hold is
 * granted only to answers that end in tool calls.
 *
 * Cheap on the hot path: one native byte search per chunk for the value, in place; only a hit
 * is decoded, and only the few bytes before it, to check that the key precedes it (`"tool_use"`
 * also names content blocks, `"tool_calls"` a delta field). The last bytes of each chunk are
 * kept so a match split across chunks is still found.
 */

/** Room for the key plus generous whitespace before the value. */
const LOOK_BACK = 48;

export interface EndPattern {
  /** The value as a JSON string literal, quotes included: `"tool_calls"`. */
  needle: Buffer;
  /** Matches the bytes before the needle when they end in the key and a colon. */
  before: RegExp;
}

function pattern(key: string, value: string): EndPattern {
  return { needle: Buffer.from(JSON.stringify(value)), before: new RegExp(`"${key}"\\s*:\\s*$`) };
}

/** An OpenAI chat answer that ends in tool calls. */
export const OPENAI_TOOL_CALLS = pattern("finish_reason", "tool_calls");
/** An Anthropic message that ends in tool use. */
export const ANTHROPIC_TOOL_USE = pattern("stop_reason", "tool_use");

export class EndScan {
  private carry: Buffer = Buffer.alloc(0);
  private hit = false;
  private readonly carryBytes: number;

  constructor(private readonly p: EndPattern) {
    this.carryBytes = LOOK_BACK + p.needle.length;
  }

  /** The pattern has been seen. */
  get found(): boolean {
    return this.hit;
  }

  feed(chunk: Uint8Array): void {
    if (this.hit) return;
    const needle = this.p.needle;
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.carry.length > 0) {
      // Matches that start in the carried tail: search the tail plus the chunk's first bytes.
      const seam = Buffer.concat([this.carry, buf.subarray(0, needle.length - 1)]);
      if (this.scan(seam, this.carry.length - needle.length + 1)) return;
    }
    if (this.scan(buf, 0, this.carry)) return;
    this.carry =
      buf.length >= this.carryBytes
        ? Buffer.from(buf.subarray(buf.length - this.carryBytes))
        : Buffer.concat([this.carry, buf]).subarray(-this.carryBytes);
  }

  /** Looks for the needle at or after `from`; `before` supplies look-back across the seam. */
  private scan(buf: Buffer, from: number, before?: Buffer): boolean {
    const { needle } = this.p;
    for (
      let at = buf.indexOf(needle, Math.max(0, from));
      at >= 0;
      at = buf.indexOf(needle, at + 1)
    ) {
      let back = buf.subarray(Math.max(0, at - LOOK_BACK), at);
      if (at < LOOK_BACK && before && before.length > 0) {
        back = Buffer.concat([before.subarray(-(LOOK_BACK - at)), back]);
      }
      if (this.p.before.test(back.toString("latin1"))) {
        this.hit = true;
        return true;
      }
    }
    return false;
  }
}
