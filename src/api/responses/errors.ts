/**
 * The Responses API's failures: OpenAI's envelope before any answer; inside a stream an
 * `error` event (`{"type":"error","code","message","param"}`), which the SDKs raise.
 */
import { asQmError, type QmError } from "../../shared/errors.ts";
import { sseEvent } from "../../shared/sse.ts";
import type { Refusal } from "../chat/refusal.ts";
import type { ExchangeApi } from "../exchange/exchange.ts";
import { openaiError } from "../openai/errors.ts";

const encoder = new TextEncoder();

export function responsesErrorEvent(e: QmError): string {
  const event = {
    type: "error",
    sequence_number: 0,
    code: e.code,
    message: e.message,
    param: null,
  };
  return sseEvent(JSON.stringify(event), "error");
}

export const RESPONSES_API: ExchangeApi = {
  name: "responses",
  error: openaiError,
  streamError: (err) => encoder.encode(responsesErrorEvent(asQmError(err))),
};

/**
 * An upstream's refusal before any answer, with its status: its body as it is when it already
 * is OpenAI's envelope (`{"error":{…}}`), else what it said wrapped in one.
 */
export function upstreamRefusal(r: Refusal, model: string, headers: Headers) {
  headers.set("content-type", "application/json");
  if (r.envelope) return new Response(r.text, { status: r.status, headers });
  const body = {
    error: {
      message: r.said || `model "${model}" answered HTTP ${r.status}`,
      type: r.status >= 500 ? "upstream_error" : "invalid_request_error",
      param: null,
      code: null,
    },
  };
  return new Response(JSON.stringify(body), { status: r.status, headers });
}
