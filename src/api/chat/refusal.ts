/**
 * What an OpenAI-compatible upstream says when it fails: a refusal (an HTTP error status with
 * an error body) or an error inside its stream. The one reader of both, for every API that
 * translates to the chat API; each renders the result in its own envelope.
 *
 * The error object comes in three shapes: `{"error":{…}}` (OpenAI, llama.cpp, vLLM ≥ 0.10.1),
 * `{"object":"error","message",…}` (older vLLM), or `{"error":"text"}`. llama.cpp adds
 * `n_prompt_tokens` and `n_ctx` to its context overflow (`exceed_context_size_error`).
 */

export interface UpstreamError {
  message?: unknown;
  type?: unknown;
  code?: unknown;
  n_prompt_tokens?: unknown;
  n_ctx?: unknown;
}

/** The inner error object of a parsed upstream error body or chunk, or null. */
export function upstreamError(body: unknown): UpstreamError | null {
  if (typeof body !== "object" || body === null) return null;
  const o = body as Record<string, unknown>;
  if (typeof o.error === "string") return { message: o.error };
  if (typeof o.error === "object" && o.error !== null) return o.error as UpstreamError;
  if (typeof o.message === "string") return o as UpstreamError;
  return null;
}

/** The prompt did not fit the model's context (llama.cpp's type, OpenAI's code, the wording). */
export function isContextOverflow(e: UpstreamError): boolean {
  if (e.type === "exceed_context_size_error" || e.code === "context_length_exceeded") return true;
  return (
    typeof e.message === "string" &&
    /context (size|length|window)|maximum context|prompt is too long/i.test(e.message)
  );
}

export interface Refusal {
  status: number;
  /** The upstream's error object ({} when the body had none). */
  error: UpstreamError;
  /**
   * What the upstream said: its error message, else the start of its body (at most 500
   * characters); "" when it said nothing.
   */
  said: string;
  /** The body already is OpenAI's envelope (`{"error":{"message":…}}`), fit to relay as it is. */
  envelope: boolean;
  /** Its `retry-after` header, if any. */
  retryAfter: string | null;
  /** The body as it came, and parsed (null when it is not JSON), for an API that relays it. */
  text: string;
  body: unknown;
}

/** An upstream's refusal: its status, its body's text and its `retry-after`. */
export function readRefusal(
  status: number,
  text: string,
  retryAfter: string | null = null,
): Refusal {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the raw text is what it said
  }
  const error = upstreamError(parsed) ?? {};
  const m = error.message;
  const said = typeof m === "string" && m !== "" ? m : text.trim().slice(0, 500);
  const inner = (parsed as { error?: unknown } | null)?.error;
  const envelope =
    typeof inner === "object" &&
    inner !== null &&
    typeof (inner as { message?: unknown }).message === "string";
  return { status, error, said, envelope, retryAfter, text, body: parsed };
}

/** `model "M" answered HTTP 503: what it said`, for the APIs that name the status. */
export function refusalMessage(model: string, r: Refusal): string {
  return `model "${model}" answered HTTP ${r.status}${r.said ? `: ${r.said}` : ""}`;
}
