/**
 * What the rewrites of passing bytes (`ModelRewrite`, `UsageStrip`) share: a chunk may end in
 * the middle of what they look for, so its tail is held back and put in front of the next
 * chunk; `end()` gives back whatever is still held when the body ends.
 */
import type { ChunkRewrite } from "./relay.ts";

export abstract class HoldingRewrite implements ChunkRewrite {
  /** Bytes held back from the last chunk (a subclass sets it in `rewrite`). */
  protected held: Buffer | null = null;

  /** One chunk in, the bytes to pass on out (the chunk itself when nothing changes). */
  feed(chunk: Uint8Array): Uint8Array {
    if (this.held === null) {
      const quick = this.quick(chunk);
      if (quick !== null) return quick;
    }
    const view = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const held = this.held;
    this.held = null;
    return held === null
      ? this.rewrite(view, false, chunk)
      : this.rewrite(Buffer.concat([held, view]), true, chunk);
  }

  /** What is still held back when the body ends (passed on as it is). */
  end(): Uint8Array | null {
    const held = this.held;
    this.held = null;
    return held;
  }

  /**
   * `buf`: the held bytes (`carried`) and then `chunk`'s. Returns what to pass on; may set
   * `held` to a tail of `buf` that it did not pass on. When it changes nothing and holds
   * nothing, returning `chunk` itself spares a copy.
   */
  protected abstract rewrite(buf: Buffer, carried: boolean, chunk: Uint8Array): Uint8Array;

  /**
   * The common chunk, decided without a `Buffer` view of it (src/shared/bytes.ts): what to pass
   * on, or null to take the general path. Only called when nothing is held.
   */
  protected quick(_chunk: Uint8Array): Uint8Array | null {
    return null;
  }
}
