import type { QmError } from "../../shared/errors.ts";

/** Ollama's error envelope: `{"error":"message"}` with the HTTP status (Ollama's api.md). */
export function ollamaError(err: QmError, headers?: Headers | Record<string, string>): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json; charset=utf-8");
  if (err.retryAfterS !== null) h.set("retry-after", String(err.retryAfterS));
  return new Response(JSON.stringify({ error: err.message }), { status: err.status, headers: h });
}
