/**
 * Server-sent events over `fetch` (EventSource cannot send an Authorization header): the body
 * is fed to eventsource-parser, which hands over events and comments (qm's wait status).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { apiUrl, authHeaders, HttpError } from "./api.ts";
import { errorOfBody } from "./chat.ts";

export interface SseHandlers {
  event(e: EventSourceMessage): void;
  comment?(text: string): void;
}

/** Reads a stream's events until it ends (or `signal` aborts: the read rejects). */
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

/** Opens a GET event stream of qm's API; throws `HttpError` unless it answers 2xx. */
export async function openSse(
  path: string,
  signal: AbortSignal,
  headers: Record<string, string> = {},
): Promise<Response> {
  const res = await fetch(apiUrl(path), {
    headers: authHeaders({ accept: "text/event-stream", ...headers }),
    signal,
  });
  if (!res.ok) throw new HttpError(res.status, errorOfBody(res.status, await res.text()));
  return res;
}

export interface Follow {
  /** Headers for each (re)connection: `Last-Event-ID` for the events stream. */
  headers?(): Record<string, string>;
  handlers: SseHandlers;
  onOpen?(): void;
  onDrop?(error: unknown): void;
  /** A 401: the key is wrong or gone; following stops. */
  onUnauthorized?(): void;
}

/**
 * Follows an endless stream, reconnecting after a drop with a growing pause (1 s doubling to
 * 15 s; back to 1 s once a connection opens). Returns the function that stops it.
 */
export function follow(path: string, f: Follow): () => void {
  const ctrl = new AbortController();
  let pause = 1000;
  void (async () => {
    while (!ctrl.signal.aborted) {
      try {
        const res = await openSse(path, ctrl.signal, f.headers?.() ?? {});
        pause = 1000;
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
      await new Promise((r) => setTimeout(r, pause));
      pause = Math.min(15_000, pause * 2);
    }
  })();
  return () => ctrl.abort();
}
