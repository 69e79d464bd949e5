/**
 * A raw HTTP/1.1 exchange over a TCP socket (Bun.connect): the request goes out byte for byte
 * as written — odd request-targets, duplicated or missing Host, broken framing — which `fetch`
 * would normalise or refuse. Reads one response (Content-Length, chunked, or to close), then
 * closes; a `text/event-stream` answer is read up to its head only.
 */

export interface RawResponse {
  /** 0 when no response came. */
  status: number;
  /** Lower-cased header names. */
  headers: Map<string, string>;
  body: string;
  /** The connection closed (or failed) before a complete response head. */
  noResponse: boolean;
  timedOut: boolean;
  ms: number;
}

const MAX_BODY = 256 * 1024;

interface Head {
  status: number;
  headers: Map<string, string>;
  bodyAt: number;
}

function parseHead(buf: Buffer): Head | null {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/\d(?:\.\d)? (\d{3})/.exec(lines[0] ?? "");
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    const k = line.slice(0, i).trim().toLowerCase();
    const v = line.slice(i + 1).trim();
    headers.set(k, headers.has(k) ? `${headers.get(k)}, ${v}` : v);
  }
  return { status: m ? Number(m[1]) : -1, headers, bodyAt: end + 4 };
}

/** Decodes a chunked body; `done` once the last chunk arrived. */
function dechunk(buf: Buffer): { body: Buffer; done: boolean } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf("\r\n", at);
    if (eol < 0) return { body: Buffer.concat(parts), done: false };
    const size = Number.parseInt(buf.subarray(at, eol).toString("latin1"), 16);
    if (!Number.isFinite(size)) return { body: Buffer.concat(parts), done: true };
    if (size === 0) return { body: Buffer.concat(parts), done: true };
    if (buf.length < eol + 2 + size) return { body: Buffer.concat(parts), done: false };
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/**
 * Where the response ends, given what has arrived: the body so far and whether it is complete.
 * Interim 1xx responses are skipped.
 */
function frame(buf: Buffer, headOnly: boolean): { head: Head; body: Buffer; done: boolean } | null {
  let rest = buf;
  for (;;) {
    const head = parseHead(rest);
    if (!head) return null;
    if (head.status >= 100 && head.status < 200) {
      rest = rest.subarray(head.bodyAt);
      continue;
    }
    const after = rest.subarray(head.bodyAt);
    const type = head.headers.get("content-type") ?? "";
    const noBody = headOnly || head.status === 204 || head.status === 304;
    if (noBody || (type.includes("text/event-stream") && head.status < 400)) {
      return { head, body: after, done: true };
    }
    if (/chunked/i.test(head.headers.get("transfer-encoding") ?? "")) {
      const d = dechunk(after);
      return { head, body: d.body, done: d.done || d.body.length > MAX_BODY };
    }
    const length = head.headers.get("content-length");
    if (length !== undefined) {
      const n = Number(length);
      return {
        head,
        body: after.subarray(0, n),
        done: after.length >= n || after.length > MAX_BODY,
      };
    }
    return { head, body: after, done: after.length > MAX_BODY };
  }
}

/**
 * Sends `request` to 127.0.0.1:`port` and reads one response. `headOnly` for HEAD requests (no
 * body follows the head). Settles within `timeoutMs` whatever the server does.
 */
export function rawRequest(
  port: number,
  request: string | Uint8Array,
  opts: { timeoutMs: number; headOnly?: boolean },
): Promise<RawResponse> {
  const t0 = performance.now();
  const bytes = typeof request === "string" ? Buffer.from(request, "latin1") : Buffer.from(request);
  return new Promise<RawResponse>((resolve) => {
    let got = Buffer.alloc(0);
    let pending = bytes;
    let settled = false;
    let sock: { end(): void; terminate(): void } | null = null;
    const settle = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const f = frame(got, opts.headOnly ?? false);
      try {
        sock?.terminate();
      } catch {
        // already closed
      }
      resolve({
        status: f ? f.head.status : 0,
        headers: f ? f.head.headers : new Map(),
        body: f ? f.body.toString("utf8") : "",
        noResponse: f === null,
        timedOut,
        ms: performance.now() - t0,
      });
    };
    const timer = setTimeout(() => settle(true), opts.timeoutMs);
    const write = (s: { write(b: Uint8Array): number }) => {
      while (pending.length > 0) {
        const n = s.write(pending);
        if (n <= 0) return;
        pending = pending.subarray(n);
      }
    };
    Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(s) {
          sock = s;
          write(s);
        },
        drain(s) {
          write(s);
        },
        data(_s, chunk) {
          got = Buffer.concat([got, chunk]);
          const f = frame(got, opts.headOnly ?? false);
          if (f?.done) settle(false);
        },
        close() {
          settle(false);
        },
        error() {
          settle(false);
        },
        connectError() {
          settle(false);
        },
      },
    }).catch(() => settle(false));
  });
}

/** `rawRequest` to a listener's URL (tests): 5 s to answer. */
export function rawTo(url: string, request: string): Promise<RawResponse> {
  return rawRequest(Number(new URL(url).port), request, { timeoutMs: 5000 });
}

/** A request with `Connection: close`, so the answer ends when the socket does. */
export function rawGet(path: string, headers: Record<string, string>, method = "GET"): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join("")}Connection: close\r\n\r\n`;
}
