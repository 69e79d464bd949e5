/**
 * The Responses API's failures: OpenAI's envelope before any answer; inside a stream an
 * `error` event (`{"type":"error","code","message","param"}`), which the SDKs raise.
 */
import { asQmError, type QmError } from "../../shared/errors.ts";
import { sseEvent } from "../../shared/sse.ts";
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
  error: openaiError,
  streamError: (err) => encoder.encode(responsesErrorEvent(asQmError(err))),
};
