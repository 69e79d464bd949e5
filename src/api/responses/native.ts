/**
 * `responses_api = "native"`: the upstream serves `/v1/responses` itself (vLLM and others do),
 * so the request goes through unchanged — only `model` is rewritten when `use_model_name` is
 * set, as on chat — and the answer comes back as it is, streamed or whole. qm still owns what
 * is around it: the model decision and wait status (the exchange), OpenAI's envelope for its
 * own failures, and whether the answer called functions, read off the bytes as they pass (the
 * observer: `"type": "function_call"` appears only in an output item). qm keeps nothing of a
 * native answer: `store` and `previous_response_id` are the upstream's.
 */

import type { ModelConfig } from "../../config/types.ts";
import type { EndPattern } from "../../proxy/end-scan.ts";
import { forward } from "../../proxy/forward.ts";
import type { Logger } from "../../shared/log.ts";
import type { Call } from "../exchange/call.ts";
import type { Exchange, SchedulingOptions } from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import { applyParams } from "../request/params.ts";
import { RESPONSES_API, responsesErrorEvent } from "./errors.ts";

const encoder = new TextEncoder();

/** A Responses answer with a function call item. */
export const RESPONSES_FUNCTION_CALL: EndPattern = {
  needle: Buffer.from('"function_call"'),
  before: /"type"\s*:\s*$/,
};

interface Native {
  body: Uint8Array;
  pathAndQuery: string;
  /** The `model` the client sent, which its answer carries. */
  requestedModel: string;
}

function send(x: Exchange<Native>, call: Call): Promise<Response> {
  return forward({
    base: call.base,
    pathAndQuery: x.parsed.pathAndQuery,
    method: "POST",
    headers: x.request.headers,
    body: x.parsed.body,
    call,
    answerModel: x.parsed.requestedModel,
    renderFailure: (err) => encoder.encode(responsesErrorEvent(err)),
  });
}

export function nativeExchange(
  request: Request,
  gw: Exchange<Native>["gw"],
  model: ModelConfig,
  scheduling: SchedulingOptions,
  log: Logger,
  bytes: Uint8Array,
  body: Record<string, unknown>,
): Exchange<Native> {
  const q = request.url.indexOf("?");
  const renamed = model.useModelName !== "";
  const out: Record<string, unknown> = renamed
    ? { ...body, model: model.useModelName }
    : { ...body };
  const rewritten =
    applyParams(model, out) || renamed ? encoder.encode(JSON.stringify(out)) : bytes;
  return {
    gw,
    request,
    model,
    scheduling,
    api: RESPONSES_API,
    log,
    placeholder: body.stream === true,
    observer: new Observer(RESPONSES_FUNCTION_CALL),
    offersTools: Array.isArray(body.tools) && body.tools.length > 0,
    body: bytes,
    json: body,
    parsed: {
      body: rewritten,
      pathAndQuery: `/v1/responses${q >= 0 ? request.url.slice(q) : ""}`,
      requestedModel: String(body.model),
    },
    send,
  };
}
