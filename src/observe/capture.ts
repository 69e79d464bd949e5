/**
 * Captured requests and answers (`[activity] capture`): what the client sent — method, path,
 * headers with the secrets redacted, the body — and the answer as the client got it, each cut
 * at `capture_bytes`; the true size is counted past the cut. Only made while capture is on: with
 * it off, no request holds a `Capture` and nothing here runs.
 *
 * Bytes are kept as bytes and decoded when read (`captureJson`): the text, cut back to the last
 * whole UTF-8 character, or — when the kept bytes are not UTF-8 (an audio upload) — base64.
 *
 * The `CaptureStore` bounds them all together (`capture_total_mb`): each kept byte is counted as
 * it is copied, and past the bound the oldest captures are dropped first, even one still being
 * filled (it then keeps nothing more).
 */

/**
 * A header or query parameter whose name says it may hold a secret: its value is never kept.
 * By pattern, not by list, so that `x-goog-api-key`, `x-amz-security-token`, `Set-Cookie`,
 * `x-session-id` or an `?api_key=` are caught as well as `authorization`.
 */
const SECRET_NAME = /key|token|secret|auth|cookie|session|password/i;
export const REDACTED = "[redacted]";

/** `name` may name a secret (any case). */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * A path and query with the values of secret-named query parameters redacted; the rest kept
 * byte for byte. A name is compared decoded (`api%5Fkey` is `api_key`).
 */
export function redactQuery(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf("?");
  if (q < 0) return pathAndQuery;
  const parts = pathAndQuery.slice(q + 1).split("&");
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const eq = part.indexOf("=");
    const raw = eq < 0 ? part : part.slice(0, eq);
    let name: string;
    try {
      name = decodeURIComponent(raw.replaceAll("+", " "));
    } catch {
      name = raw;
    }
    if (eq >= 0 && isSecretName(name)) {
      parts[i] = `${raw}=${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${pathAndQuery.slice(0, q + 1)}${parts.join("&")}` : pathAndQuery;
}

const encoder = new TextEncoder();
/** A body that is one JSON document (not NDJSON lines): qm holds it whole. */
const WHOLE = /^application\/(?:[\w.+-]+\+)?json\b/i;
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** One captured body: at most the cap's bytes kept, all of them counted. */
class Part {
  readonly chunks: Uint8Array[] = [];
  kept = 0;
  total = 0;
}

export class Capture {
  /** No prototype: a header named `__proto__` is kept like any other. */
  readonly headers: Record<string, string> = Object.create(null);
  readonly body = new Part();
  /** Null until the client's response has a body. */
  answer: Part | null = null;
  /** Dropped by the store's bound: keeps nothing more. */
  dropped = false;
  /** Bytes this capture holds in its store. */
  held = 0;

  constructor(
    private readonly store: CaptureStore,
    readonly method: string,
    readonly path: string,
    headers: Headers,
  ) {
    let size = 0;
    for (const [name, value] of headers) {
      const kept = isSecretName(name) ? REDACTED : value;
      this.headers[name] = kept;
      size += name.length + kept.length;
    }
    store.grew(this, size + method.length + path.length);
  }

  /** Copies what fits of `chunk` into `part`. */
  add(part: Part, chunk: Uint8Array): void {
    part.total += chunk.byteLength;
    if (this.dropped) return;
    const room = this.store.perPart - part.kept;
    if (room <= 0) return;
    const copy = chunk.byteLength <= room ? chunk.slice() : chunk.slice(0, room);
    part.chunks.push(copy);
    part.kept += copy.byteLength;
    this.store.grew(this, copy.byteLength);
  }

  /**
   * The client's response, with its body copied as the client reads it. A JSON answer is one
   * document qm already holds whole (`forward` reads it whole; the translators build theirs):
   * it is taken as it is. Any other body is read chunk by chunk as the client pulls: each chunk
   * is handed on first, then what fits is copied; nothing is read ahead, and the client leaving
   * cancels the source as before.
   */
  tee(res: Response): Response | Promise<Response> {
    const source = res.body;
    if (source === null) return res;
    const part = new Part();
    this.answer = part;
    const init = { status: res.status, statusText: res.statusText, headers: res.headers };
    if (WHOLE.test(res.headers.get("content-type") ?? "")) {
      return res.bytes().then((bytes) => {
        this.add(part, bytes);
        return new Response(bytes, init);
      });
    }
    const reader = source.getReader();
    const capture = this;
    const copy = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const step = await reader.read();
          if (step.done) {
            controller.close();
            return;
          }
          const chunk = step.value as Uint8Array | string;
          const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
          controller.enqueue(bytes);
          capture.add(part, bytes);
        },
        cancel(reason) {
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(copy, init);
  }

  /** Its store forgot it. */
  drop(): void {
    this.dropped = true;
    this.body.chunks.length = 0;
    if (this.answer) this.answer.chunks.length = 0;
  }
}

/** The captures of one gateway, bounded together; the oldest is dropped first. */
export class CaptureStore {
  /** Insertion order is age: the first is the oldest. */
  private readonly live = new Set<Capture>();
  private used = 0;

  constructor(
    /** Bytes kept of each body. */
    readonly perPart: number,
    /** Bytes kept by all captures together. */
    readonly totalBytes: number,
  ) {}

  /** A capture of `request` (its body already read: `body`). */
  begin(request: Request, body: Uint8Array | null | undefined): Capture {
    const url = request.url;
    const slash = url.indexOf("/", url.indexOf("//") + 2);
    const c = new Capture(
      this,
      request.method,
      slash < 0 ? "/" : redactQuery(url.slice(slash)),
      request.headers,
    );
    if (body) c.add(c.body, body);
    return c;
  }

  /** Bytes held by every capture kept. */
  get bytes(): number {
    return this.used;
  }

  /** `c` holds `n` bytes more; past the bound the oldest go. */
  grew(c: Capture, n: number): void {
    if (c.dropped) return;
    if (c.held === 0) this.live.add(c);
    c.held += n;
    this.used += n;
    while (this.used > this.totalBytes) {
      const oldest = this.live.values().next().value;
      if (oldest === undefined) break;
      this.drop(oldest);
    }
  }

  /** Forgets `c` (its record left the activity log, or the bound). */
  drop(c: Capture): void {
    if (c.dropped) return;
    if (this.live.delete(c)) this.used -= c.held;
    c.held = 0;
    c.drop();
  }
}

/** A body as `GET /api/requests/{id}` shows it: `text`, or `base64` when not UTF-8. */
export interface CapturedBody {
  /** Its real size in bytes. */
  bytes: number;
  /** Only the first `capture_bytes` were kept. */
  truncated: boolean;
  text?: string;
  base64?: string;
}

export interface CaptureJson {
  request: {
    method: string;
    path: string;
    headers: Record<string, string>;
    body: CapturedBody;
  };
  /** The answer as the client got it (so far, for a stream still going); null: no body. */
  answer: CapturedBody | null;
}

/** What `c` kept, or null when it was dropped. */
export function captureJson(c: Capture | null): CaptureJson | null {
  if (c === null || c.dropped) return null;
  return {
    request: { method: c.method, path: c.path, headers: c.headers, body: partJson(c.body) },
    answer: c.answer ? partJson(c.answer) : null,
  };
}

function partJson(p: Part): CapturedBody {
  const bytes = p.chunks.length === 1 ? p.chunks[0]! : Buffer.concat(p.chunks, p.kept);
  const truncated = p.total > p.kept;
  const end = truncated ? utf8Boundary(bytes) : bytes.byteLength;
  try {
    return { bytes: p.total, truncated, text: strict.decode(bytes.subarray(0, end)) };
  } catch {
    return { bytes: p.total, truncated, base64: Buffer.from(bytes).toString("base64") };
  }
}

/**
 * Where `bytes`, cut from a longer text, ends on a whole UTF-8 character: the cut character's
 * bytes are left out (RFC 3629 §3: continuation bytes are 10xxxxxx, a lead byte says how many
 * follow it).
 */
export function utf8Boundary(bytes: Uint8Array): number {
  const end = bytes.byteLength;
  let i = end;
  let continuation = 0;
  while (i > 0 && continuation < 3 && (bytes[i - 1]! & 0xc0) === 0x80) {
    i--;
    continuation++;
  }
  if (i === 0) return end;
  const lead = bytes[i - 1]!;
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return length > continuation + 1 ? i - 1 : end;
}
