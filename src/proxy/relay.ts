/**
 * Relays an upstream body to the client chunk by chunk — each chunk is handed on the moment it
 * arrives, never gathered — and reports exactly once how the relay ended.
 */
export type RelayEnd =
  | { kind: "done" }
  | { kind: "cancelled" }
  | { kind: "failed"; error: unknown };

export interface RelayOptions {
  /** Called once per chunk before it is passed on (e.g. to watch for tool calls). */
  onChunk?: (chunk: Uint8Array) => void;
  /** Bytes to write after a mid-stream failure instead of cutting the connection bluntly. */
  onFailure?: (error: unknown) => Uint8Array | null;
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
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (error) {
          const tail = opts.onFailure?.(error) ?? null;
          if (tail) {
            controller.enqueue(tail);
            controller.close();
          } else {
            controller.error(error);
          }
          end({ kind: "failed", error });
          return;
        }
        if (step.done) {
          controller.close();
          end({ kind: "done" });
          return;
        }
        opts.onChunk?.(step.value);
        controller.enqueue(step.value);
      },
      cancel(reason) {
        end({ kind: "cancelled" });
        return reader.cancel(reason).catch(() => {});
      },
    },
    // Pull only when the client side wants more: back-pressure reaches the upstream.
    { highWaterMark: 0 },
  );
}
