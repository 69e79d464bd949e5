/**
 * A fake upstream without a socket. qm's code is handed `fake.fetch` through its deps (a
 * gateway's, a runtime's, a client's: nothing replaces `globalThis.fetch`), and calls to `url`
 * are recorded exactly as qm made them — headers as qm handed them to fetch, before any socket
 * adds its own — and answered by `answer`. Calls elsewhere go to the real fetch.
 *
 * `useFakeFetch()` makes one for a test file, fresh before each test, and registers it while the
 * test runs: `upstreams` (what `fakeGateway` calls upstreams with unless told otherwise) sends a
 * call to the registered fake whose `url` it goes to.
 */
import { afterEach, beforeEach } from "bun:test";
import type { Fetch } from "../../src/shared/fetch.ts";

export interface Sent {
  url: string;
  /** Path and query, as the upstream sees them. */
  path: string;
  method: string;
  headers: Headers;
  body: Uint8Array;
  signal: AbortSignal | null;
  /** The init qm passed (fetch options such as `decompress` and `redirect`). */
  init: RequestInit & Record<string, unknown>;
}

export class FakeFetch {
  readonly sent: Sent[] = [];
  answer: (sent: Sent) => Response | Promise<Response> = () =>
    new Response("no answer scripted", { status: 500 });

  constructor(readonly url = "http://upstream.test") {}

  /** The fetch to hand qm. */
  readonly fetch: Fetch = async (url, init = {}) => {
    if (!url.startsWith(this.url)) return fetch(url, init);
    const body = init.body ? new Uint8Array(await new Response(init.body).arrayBuffer()) : null;
    const signal = init.signal ?? null;
    const sent: Sent = {
      url,
      path: url.slice(this.url.length),
      method: init.method ?? "GET",
      headers: new Headers(init.headers),
      body: body ?? new Uint8Array(0),
      signal,
      init: init as Sent["init"],
    };
    this.sent.push(sent);
    return abortable(Promise.resolve(this.answer(sent)), signal);
  };

  /** The latest call whose path starts with `path`. */
  last(path = "/"): Sent {
    const found = this.sent.filter((s) => s.path.startsWith(path)).at(-1);
    if (!found) throw new Error(`no upstream call to ${path}`);
    return found;
  }

  /** The calls whose path starts with `path`. */
  calls(path: string): Sent[] {
    return this.sent.filter((s) => s.path.startsWith(path));
  }
}

/** Rejects as fetch does when the signal aborts before the answer's headers are in. */
function abortable(answer: Promise<Response>, signal: AbortSignal | null): Promise<Response> {
  if (!signal) return answer;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    answer.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** The fakes registered by the running test (`useFakeFetch`). */
const registered = new Set<FakeFetch>();

/** A call to a registered fake's `url` goes to that fake; any other to the real fetch. */
export const upstreams: Fetch = (url, init) => {
  for (const fake of registered) if (url.startsWith(fake.url)) return fake.fetch(url, init);
  return fetch(url, init);
};

/** A FakeFetch for the calling file: emptied and registered before each test, unregistered after. */
export function useFakeFetch(url?: string): FakeFetch {
  const fake = new FakeFetch(url);
  beforeEach(() => {
    fake.sent.length = 0;
    fake.answer = () => new Response("no answer scripted", { status: 500 });
    registered.add(fake);
  });
  afterEach(() => {
    registered.delete(fake);
  });
  return fake;
}

/** The body of a recorded call as JSON. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read bodies loosely
export function jsonOf(sent: Sent): Record<string, any> {
  return JSON.parse(new TextDecoder().decode(sent.body));
}

/**
 * A body the test feeds piece by piece: `push` a chunk, `end` it, or `fail` it mid-way.
 * `cancelled` resolves when its reader cancels it (the client went away).
 */
export function scriptedBody() {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  let onCancel: () => void = () => {};
  const cancelled = new Promise<void>((r) => {
    onCancel = r;
  });
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
    },
    cancel() {
      onCancel();
    },
  });
  const enc = new TextEncoder();
  return {
    stream,
    cancelled,
    push: (text: string) => ctl.enqueue(enc.encode(text)),
    end: () => ctl.close(),
    fail: (error: Error) => ctl.error(error),
  };
}
