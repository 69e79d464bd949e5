/** Errors of qm's API as the page reports them: the status, and the envelope's message. Pure. */

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The message of an error body in any of qm's envelopes: OpenAI's and Anthropic's
 * `{"error":{"message"}}`, Ollama's `{"error":"…"}`. Null when there is none.
 */
export function errorText(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const e = (body as { error?: unknown }).error;
  if (typeof e === "string") return e;
  if (typeof e === "object" && e !== null) {
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string") return message;
  }
  return null;
}

/** `errorText` of a response body as text (which may not be JSON at all). */
export function errorOfBody(status: number, text: string): string {
  try {
    const m = errorText(JSON.parse(text));
    if (m) return m;
  } catch {
    // not JSON: the status says it all
  }
  return `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ""}`;
}
