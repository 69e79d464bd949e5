import { isFinalStatus, QmError } from "../../shared/errors.ts";
import { readRefusal, refusalMessage } from "../chat/refusal.ts";
import type { ExchangeApi } from "../exchange/exchange.ts";

const encoder = new TextEncoder();

/** Ollama's error envelope: `{"error":"message"}` with the HTTP status (Ollama's api.md). */
export function ollamaError(err: QmError, headers?: Headers | Record<string, string>): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  if (err.retryAfterS !== null) h.set("retry-after", String(err.retryAfterS));
  // A 4xx that fails the same way every time: clients that retry on their own read this.
  if (isFinalStatus(err.status)) h.set("x-should-retry", "false");
  return new Response(JSON.stringify({ error: err.message }), { status: err.status, headers: h });
}

/** How the Ollama routes write failures: the envelope, or an error line inside a stream. */
export const OLLAMA: ExchangeApi = {
  name: "ollama",
  error: ollamaError,
  streamError: (err) =>
    encoder.encode(
      `${JSON.stringify({ error: err instanceof Error ? err.message : String(err) })}\n`,
    ),
};

/**
 * An upstream's refusal (an OpenAI-style error body) as Ollama's: its message, its status where
 * it is a client's fault (4xx), else 502 — the model's server failed, not qm.
 */
export function fromUpstreamText(status: number, text: string, model: string): QmError {
  const message = refusalMessage(model, readRefusal(status, text));
  if (status >= 400 && status < 500) return new StatusError(status, message);
  return new QmError("upstream_failed", message);
}

/** A QmError that keeps the upstream's 4xx status. */
class StatusError extends QmError {
  override readonly status: number;
  constructor(status: number, message: string) {
    super("bad_request", message);
    this.status = status;
  }
}
