/**
 * Anthropic's error envelope, `{"type":"error","error":{"type","message"},"request_id"}`, and
 * the status → type table of https://docs.anthropic.com/en/api/errors. The SDKs pick the
 * exception class from the status and expose `error.type`; Claude Code's recovery matches on
 * the wording of some messages (its gateway docs ask gateways not to rewrap them), so the
 * context-overflow message below uses Anthropic's own phrasing.
 */
import { asQmError, isFinalStatus, QmError } from "../../shared/errors.ts";
import { sseEvent } from "../../shared/sse.ts";
import { isContextOverflow, type Refusal, type UpstreamError } from "../chat/refusal.ts";
import type { ExchangeApi } from "../exchange/exchange.ts";
import { requestId } from "./ids.ts";

export type AnthropicErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "billing_error"
  | "permission_error"
  | "not_found_error"
  | "request_too_large"
  | "rate_limit_error"
  | "api_error"
  | "timeout_error"
  | "overloaded_error";

export interface AnthropicFailure {
  status: number;
  type: AnthropicErrorType;
  message: string;
  /** Extra response headers (`retry-after`, `x-should-retry`). */
  headers?: Record<string, string>;
}

export function typeForStatus(status: number): AnthropicErrorType {
  switch (status) {
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    case 503:
    case 529:
      return "overloaded_error";
  }
  return status >= 500 ? "api_error" : "invalid_request_error";
}

/** qm's own failures keep qm's status codes (docs/api.md) and get the matching Anthropic type. */
export function fromQmError(err: QmError): AnthropicFailure {
  const failure: AnthropicFailure = {
    status: err.status,
    type: typeForStatus(err.status),
    message: err.message,
  };
  if (err.status === 503) failure.headers = { "retry-after": String(err.retryAfterS ?? 5) };
  else if (err.retryAfterS !== null) failure.headers = { "retry-after": String(err.retryAfterS) };
  return failure;
}

export function errorBody(type: AnthropicErrorType, message: string, id = requestId()): string {
  return JSON.stringify({ type: "error", error: { type, message }, request_id: id });
}

export function anthropicError(
  failure: AnthropicFailure | QmError,
  headers?: Headers | Record<string, string>,
): Response {
  const f = failure instanceof QmError ? fromQmError(failure) : failure;
  const h = new Headers(headers);
  const id = h.get("request-id") ?? requestId();
  h.set("content-type", "application/json");
  h.set("request-id", id);
  if (isFinalStatus(f.status)) h.set("x-should-retry", "false");
  for (const [k, v] of Object.entries(f.headers ?? {})) h.set(k, v);
  return new Response(errorBody(f.type, f.message, id), { status: f.status, headers: h });
}

/**
 * A streamed error (https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events).
 * The `event:` line is required: the TS SDK ignores events that only have `data:`.
 */
export function errorEvent(type: AnthropicErrorType, message: string): string {
  return sseEvent(JSON.stringify({ type: "error", error: { type, message } }), "error");
}

const encoder = new TextEncoder();

/** Anthropic's envelope for failures before the answer, `event: error` inside a stream. */
export const ANTHROPIC: ExchangeApi = {
  name: "anthropic",
  error: (err, headers) => anthropicError(err, headers),
  streamError: (err) => {
    const f = fromQmError(asQmError(err));
    return encoder.encode(errorEvent(f.type, f.message));
  },
};

/**
 * Maps an upstream (OpenAI-API) refusal (`api/chat/refusal.ts`) to Anthropic's error. Status
 * is kept where Anthropic has a type for it; 503 (llama-server "Loading model", vLLM busy)
 * becomes 529 overloaded with `retry-after`, which the SDKs retry.
 */
export function fromUpstream(r: Refusal, model: string): AnthropicFailure {
  const { status, error: e } = r;
  const message = r.said || `model "${model}" answered HTTP ${status}`;
  if (status === 503) {
    return {
      status: 529,
      type: "overloaded_error",
      // qm answers its own loading waits itself; a 503 here came from the model server.
      message: `model "${model}" answered 503 Service Unavailable: ${message}`,
      headers: { "retry-after": r.retryAfter ?? "5" },
    };
  }
  if (isContextOverflow(e)) {
    // Anthropic: "prompt is too long: 205429 tokens > 200000 maximum".
    const n = e.n_prompt_tokens;
    const ctx = e.n_ctx;
    const text =
      typeof n === "number" && typeof ctx === "number"
        ? `prompt is too long: ${n} tokens > ${ctx} maximum`
        : `prompt is too long: ${message}`;
    return { status: 400, type: "invalid_request_error", message: text };
  }
  const failure: AnthropicFailure = { status, type: typeForStatus(status), message };
  if (status === 429 && r.retryAfter) failure.headers = { "retry-after": r.retryAfter };
  // A grammar the upstream cannot compile fails the same way every time: SDKs must not retry.
  if (status >= 500 && /grammar/i.test(message)) failure.headers = { "x-should-retry": "false" };
  return failure;
}

/** The error type for an error that arrives inside an upstream stream (`data: {"error":…}`). */
export function streamErrorType(e: UpstreamError): AnthropicErrorType {
  if (isContextOverflow(e)) return "invalid_request_error";
  const code = typeof e.code === "number" ? e.code : null;
  if (code === 503 || e.type === "unavailable_error") return "overloaded_error";
  if (code !== null && code >= 400 && code < 500) return typeForStatus(code);
  return "api_error";
}
