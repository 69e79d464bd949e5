/**
 * Relays an upstream body to the client chunk by chunk — each chunk is written and flushed the
 * moment it arrives, never gathered — and reports exactly once how the relay ended.
 *
 * Built on Bun's "direct" ReadableStream: the server hands us its writer, so a chunk costs one
 * write and one flush instead of a trip through a stream queue. Back-pressure still reaches the
 * upstream: a pending write is awaited before the next read.
 */
export type RelayEnd =
  | { kind: "done" }
  | { kind: "cancelled" }
  | { kind: "failed"; error: unknown };

export interface RelayOptions {
  /** Called once per chunk before it is passed on (e.g. to watch for tool calls). */
  onChunk?: ((chunk: Uint8Array) => void) | undefined;
  /** Bytes to write after a mid-stream failure instead of cutting the connection bluntly. */
  onFailure?: ((error: unknown) => Uint8Array | null) | undefined;
  onEnd: (end: RelayEnd) => void;
}

export function relay(
  source: ReadableStream<Uint8Array>,
  opts: RelayOptions,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let ended = false;
  const end = (e: RelayEnd) => {
    if (ended) return;
    ended = true;
    opts.onEnd(e);
  };
  const direct: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      try {
        for (;;) {
          const step = await reader.read();
          if (step.done) break;
          opts.onChunk?.(step.value);
          const wrote = controller.write(step.value);
          if (typeof wrote !== "number") await wrote;
          const flushed = controller.flush();
          if (typeof flushed !== "number") await flushed;
        }
        end({ kind: "done" });
      } catch (error) {
        // A client that left has already been reported by cancel(); the read that failed
        // because of it is not an upstream failure.
        if (!ended) {
          const tail = opts.onFailure?.(error) ?? null;
          if (tail) controller.write(tail);
          end({ kind: "failed", error });
        }
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
