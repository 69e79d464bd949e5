/**
 * Server-sent events over `fetch` (EventSource cannot send an Authorization header): the body
 * is fed to eventsource-parser, which hands over events and comments (qm's wait status), and
 * `follow` keeps an endless stream open across drops. No page globals: the stream is opened by
 * the caller, and the pause between tries can be replaced (tests/ui/sse.test.ts).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { HttpError } from "./errors.ts";

export interface SseHandlers {
  event(e: EventSourceMessage): void;
  comment?(text: string): void;
}

/** Reads a stream's events until it ends (or its request aborts: the read rejects). */
export async function readSse(res: Response, on: SseHandlers): Promise<void> {
  if (!res.body) return;
  const parser = createParser({
    onEvent: (e) => on.event(e),
    onComment: (c) => on.comment?.(c),
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(value);
    }
  } finally {
    reader.releaseLock();
  }
}

export interface Follow {
  handlers: SseHandlers;
  onOpen?(): void;
  onDrop?(error: unknown): void;
  /** A 401: the key is wrong or gone; following stops. */
  onUnauthorized?(): void;
}

/** The pauses between tries: 1 s, doubling to 15 s; back to 1 s once a connection opens. */
export const FIRST_PAUSE_MS = 1000;
export const MAX_PAUSE_MS = 15_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Follows an endless stream: `open` makes each connection (its headers may change between
 * them: `Last-Event-ID`), and a drop or a failure is followed by a pause and a new try. Returns
 * the function that stops it (the connection open then is aborted).
 */
export function follow(
  open: (signal: AbortSignal) => Promise<Response>,
  f: Follow,
  pause: (ms: number) => Promise<void> = sleep,
): () => void {
  const ctrl = new AbortController();
  let wait = FIRST_PAUSE_MS;
  void (async () => {
    while (!ctrl.signal.aborted) {
      try {
        const res = await open(ctrl.signal);
        wait = FIRST_PAUSE_MS;
        f.onOpen?.();
        await readSse(res, f.handlers);
        if (!ctrl.signal.aborted) f.onDrop?.(null);
      } catch (err) {
        if (ctrl.signal.aborted) return;
        if (err instanceof HttpError && err.status === 401) {
          f.onUnauthorized?.();
          return;
        }
        f.onDrop?.(err);
      }
      if (ctrl.signal.aborted) return;
      await pause(wait);
      wait = Math.min(MAX_PAUSE_MS, wait * 2);
    }
  })();
  return () => ctrl.abort();
}
