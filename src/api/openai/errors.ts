import { isFinalStatus, type QmError } from "../../shared/errors.ts";

/**
 * OpenAI's error envelope: `{"error":{"message","type","param","code"}}`
 * (https://platform.openai.com/docs/guides/error-codes).
 */
export function openaiErrorBody(err: QmError): string {
  return JSON.stringify({
    error: { message: err.message, type: openaiType(err), param: err.param, code: err.code },
  });
}

export function openaiError(err: QmError, headers?: Headers | Record<string, string>): Response {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  if (isFinalStatus(err.status)) h.set("x-should-retry", "false");
  if (err.retryAfterS !== null) h.set("retry-after", String(err.retryAfterS));
  return new Response(openaiErrorBody(err), { status: err.status, headers: h });
}

function openaiType(err: QmError): string {
  switch (err.status) {
    case 400:
    case 404:
    case 405:
    case 409:
    case 413:
    case 414:
    case 415:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 429:
      return "rate_limit_error";
    case 499:
      return "cancelled";
    case 503:
      return "unavailable_error";
    case 502:
    case 504:
      return "upstream_error";
    default:
      return "server_error";
  }
}
