import { QmError } from "../shared/errors.ts";
import { clientResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { type RelayEnd, relay } from "./relay.ts";

export interface ForwardRequest {
  /** Upstream base URL (no trailing slash) and the path + query to call on it. */
  base: string;
  pathAndQuery: string;
  method: string;
  headers: Headers;
  body: Uint8Array | null;
  signal: AbortSignal;
  /** Model id, for error messages. */
  model: string;
  /** Last lines the upstream printed, read only when something goes wrong. */
  stderrTail: () => string[];
  onChunk?: ((chunk: Uint8Array) => void) | undefined;
  /**
   * Return the upstream's response as it came, body unread: for a caller that consumes the
   * body itself (the Anthropic translator). `onEnd` then fires only if no response came.
   */
  raw?: boolean;
  /** Set on the client's response (e.g. `X-QM-Model`). */
  extraHeaders?: Iterable<[string, string]>;
  /** Called exactly once when the exchange is over, however it ended. */
  onEnd: (end: RelayEnd) => void;
}

/**
 * Sends one request upstream and returns the client's response, whose body is relayed chunk by
 * chunk. Throws a QmError (after calling onEnd) when no response came at all.
 */
export async function forward(req: ForwardRequest): Promise<Response> {
  let upstream: Response;
  try {
    upstream = await fetch(req.base + req.pathAndQuery, {
      method: req.method,
      headers: upstreamRequestHeaders(req.headers),
      body: req.body,
      signal: req.signal,
      redirect: "manual",
      // Relay bytes as they are; a model can think for minutes before its first byte; and a
      // loopback upstream must never be sent through an HTTP proxy from the environment.
      decompress: false,
      timeout: false,
      proxy: false,
    } as RequestInit);
  } catch (error) {
    throw ended(req, error);
  }
  if (req.raw) return upstream;
  const headers = clientResponseHeaders(upstream.headers);
  if (req.extraHeaders) for (const [k, v] of req.extraHeaders) headers.set(k, v);
  if (!upstream.body) {
    req.onEnd({ kind: "done" });
    return new Response(null, { status: upstream.status, headers });
  }
  const type = headers.get("content-type") ?? "";
  const sse = type.includes("text/event-stream");
  if (!sse && WHOLE_JSON.test(type)) {
    // A JSON answer is only usable whole, so nothing is gained by relaying it piecemeal; taking
    // it in one read is cheaper per request and tells us exactly when the exchange is over.
    let bytes: Uint8Array;
    try {
      bytes = await upstream.bytes();
    } catch (error) {
      throw ended(req, error);
    }
    req.onChunk?.(bytes);
    req.onEnd({ kind: "done" });
    return new Response(bytes, { status: upstream.status, headers });
  }
  const body = relay(upstream.body, {
    onChunk: req.onChunk,
    onEnd: req.onEnd,
    // An SSE client can be told why its stream ended; any other body is simply cut short.
    onFailure: sse
      ? (error) =>
          req.signal.aborted ? null : sseError(upstreamFailure(req.model, error, req.stderrTail()))
      : undefined,
  });
  return new Response(body, { status: upstream.status, headers });
}

/**
 * `application/json` or a `+json` type (RFC 6839): one document, usable only whole. Not
 * `application/x-ndjson` and the like, which stream line by line and are relayed as they come.
 */
const WHOLE_JSON = /^\s*application\/(?:json|[\w.+-]*\+json)\s*(?:;|$)/i;

/** Reports the end of an exchange that produced no response, and the error to answer with. */
function ended(req: ForwardRequest, error: unknown): QmError {
  req.onEnd({ kind: req.signal.aborted ? "cancelled" : "failed", error });
  if (req.signal.aborted) {
    return new QmError("cancelled", `the client went away while "${req.model}" was answering`);
  }
  return new QmError("upstream_failed", upstreamFailure(req.model, error, req.stderrTail()), {
    cause: error,
  });
}

export function upstreamFailure(model: string, error: unknown, tail: string[]): string {
  const why = error instanceof Error ? error.message : String(error);
  const lines = tail.length ? `; last output:\n${tail.join("\n")}` : "";
  return `model "${model}" failed to answer: ${why}${lines}`;
}

const encoder = new TextEncoder();

/** An OpenAI-style error event; the OpenAI SDKs raise it as an API error. */
export function sseError(
  message: string,
  type = "upstream_error",
  code = "upstream_failed",
): Uint8Array {
  const payload = JSON.stringify({ error: { message, type, param: null, code } });
  return encoder.encode(`data: ${payload}\n\n`);
}
