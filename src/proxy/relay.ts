/**
 * Relays an upstream body to the client chunk by chunk — each chunk is written and flushed the
 * moment it arrives, never gathered — and reports exactly once how the relay ended.
 *
 * Built on Bun's "direct" ReadableStream: the server hands us its writer, so a chunk costs one
 * write and one flush instead of a trip through a stream queue. Back-pressure still reaches the
 * upstream: a pending write is awaited before the next read.
 */
import type { ReadWatch } from "./deadline.ts";

export type RelayEnd =
  | { kind: "done" }
  | { kind: "cancelled" }
  | { kind: "failed"; error: unknown };

/** What a `check` found wrong with the bytes (the message says what, without the model). */
export class BrokenStream extends Error {
  override readonly name = "BrokenStream";
}

export interface StreamCheck {
  feed(chunk: Uint8Array): { problem: string; keep: number } | null;
  end(): string | null;
}

/** Sees each chunk before it is passed on (e.g. to watch for tool calls). */
export interface ChunkObserver {
  chunk(chunk: Uint8Array): void;
}

/** Changes the bytes as they pass (`ModelRewrite`); `end()` gives back what it held. */
export interface ChunkRewrite {
  feed(chunk: Uint8Array): Uint8Array;
  end(): Uint8Array | null;
}

export interface RelayOptions {
  observer?: ChunkObserver | null | undefined;
  /** Applied to each chunk after the observer saw it and before the check judges it. */
  rewrite?: ChunkRewrite | null | undefined;
  /** Told when each read of the upstream starts and returns, and the end (the call's deadline). */
  watch?: (ReadWatch & { end(answered: boolean): void }) | null | undefined;
  /**
   * Judges the bytes as they pass: a problem ends the relay as a failure, after the chunk's
   * first `keep` bytes (nothing that follows a broken event is sound); `end()` judges how the
   * body ended.
   */
  check?: StreamCheck | null | undefined;
  /** Bytes to write after a mid-stream failure instead of cutting the connection bluntly. */
  onFailure?: ((error: unknown) => Uint8Array | null) | undefined;
  /** Told exactly once how the relay ended. */
  onEnd: { ended(end: RelayEnd): void };
}

export function relay(
  source: ReadableStream<Uint8Array>,
  opts: RelayOptions,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const { observer, watch, check, rewrite } = opts;
  let ended = false;
  const end = (e: RelayEnd) => {
    if (ended) return;
    ended = true;
    watch?.end(e.kind === "done");
    opts.onEnd.ended(e);
  };
  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      const fail = (error: unknown) => {
        const tail = opts.onFailure?.(error) ?? null;
        if (tail) controller.write(tail);
        end({ kind: "failed", error });
      };
      try {
        let problem: string | null = null;
        for (;;) {
          watch?.reading();
          const step = await reader.read();
          watch?.read();
          let chunk: Uint8Array;
          if (step.done) {
            const held = rewrite?.end() ?? null;
            if (held === null) {
              problem = check?.end() ?? null;
              break;
            }
            chunk = held;
          } else {
            observer?.chunk(step.value);
            chunk = rewrite ? rewrite.feed(step.value) : step.value;
            if (chunk.length === 0) continue;
          }
          const verdict = check ? check.feed(chunk) : null;
          if (verdict) {
            problem = verdict.problem;
            chunk = chunk.subarray(0, verdict.keep);
          }
          const wrote = controller.write(chunk);
          if (typeof wrote !== "number") await wrote;
          const flushed = controller.flush();
          if (typeof flushed !== "number") await flushed;
          if (problem) {
            // Nothing sound can follow: stop the upstream too.
            void reader.cancel().catch(() => {});
            break;
          }
        }
        if (problem) fail(new BrokenStream(problem));
        else end({ kind: "done" });
      } catch (error) {
        // A client that left has already been reported by cancel(); the read that failed
        // because of it is not an upstream failure.
        if (!ended) fail(error);
      }
      controller.close();
    },
    cancel(reason) {
      end({ kind: "cancelled" });
      return reader.cancel(reason).catch(() => {});
    },
  };
  return new ReadableStream(direct as unknown as Bun.UnderlyingSource<Uint8Array>);
}
