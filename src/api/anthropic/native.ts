/**
 * `anthropic_native = true`: the upstream speaks `/v1/messages` itself (llama.cpp, vLLM and
 * mistral.rs all do), so the request goes through untranslated and the answer comes back as
 * it is. qm still owns what is around it: the model decision and wait status (the exchange),
 * the Anthropic error envelope for failures (native servers often answer errors OpenAI-style),
 * and whether the answer ended in tool use, read off the bytes as they pass (the observer).
 */

import { ANTHROPIC_TOOL_USE } from "../../proxy/end-scan.ts";
import { forward } from "../../proxy/forward.ts";
import { readRefusal } from "../chat/refusal.ts";
import type { Call } from "../exchange/call.ts";
import { type Exchange, headersOf, type SchedulingOptions } from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import { applyParams } from "../request/params.ts";
import type { AnthropicRequest } from "./context.ts";
import { ANTHROPIC, anthropicError, errorEvent, fromQmError, fromUpstream } from "./errors.ts";
import type { ParsedRequest } from "./request-body.ts";
import type { MessagesRequest } from "./wire.ts";

const encoder = new TextEncoder();

interface Native {
  body: Uint8Array;
  pathAndQuery: string;
  /** The `model` the client sent, which its answer carries. */
  requestedModel: string;
}

/** The client's headers minus Anthropic's own, which are qm's business, not the upstream's. */
function nativeHeaders(incoming: Headers): Headers {
  const out = new Headers(incoming);
  out.delete("anthropic-version");
  out.delete("anthropic-beta");
  return out;
}

/** An upstream refusal: as is when it already is an Anthropic error, else rewrapped. */
async function refusal(res: Response, model: string, headers: Headers): Promise<Response> {
  const text = await res.text().catch(() => "");
  const r = readRefusal(res.status, text, res.headers.get("retry-after"));
  const json = r.body as { type?: unknown; error?: { type?: unknown } } | null;
  if (json?.type === "error" && typeof json.error?.type === "string") {
    headers.set("content-type", "application/json");
    return new Response(text, { status: res.status, headers });
  }
  return anthropicError(fromUpstream(r, model), headers);
}

/** A native stream is Anthropic's: so is the event that ends a broken one. */
function renderFailure(err: Parameters<typeof fromQmError>[0]): Uint8Array {
  const f = fromQmError(err);
  return encoder.encode(errorEvent(f.type, f.message));
}

async function send(x: Exchange<Native>, call: Call): Promise<Response> {
  call.tag(headersOf(x));
  const res = await forward({
    base: call.base,
    pathAndQuery: x.parsed.pathAndQuery,
    method: "POST",
    headers: nativeHeaders(x.request.headers),
    body: x.parsed.body,
    call,
    answerModel: x.parsed.requestedModel,
    renderFailure,
  });
  if (res.status < 400) {
    for (const [k, v] of headersOf(x)) res.headers.set(k, v);
    return res;
  }
  if (!x.committed) return refusal(res, x.model.id, headersOf(x));
  // Behind the placeholder the 200 went out long ago: the refusal becomes an error event.
  const text = await res.text().catch(() => "");
  const f = fromUpstream(readRefusal(res.status, text), x.model.id);
  return new Response(errorEvent(f.type, f.message));
}

export function nativeExchange(
  ctx: AnthropicRequest,
  parsed: ParsedRequest<MessagesRequest>,
  headers: Headers,
  scheduling: SchedulingOptions,
): Exchange<Native> {
  const { request } = ctx;
  const { model, body } = parsed;
  const q = request.url.indexOf("?");
  const payload: Record<string, unknown> = model.useModelName
    ? { ...body, model: model.useModelName }
    : { ...body };
  applyParams(model, payload);
  return {
    gw: ctx.gw,
    request,
    model,
    scheduling,
    headers,
    api: ANTHROPIC,
    log: ctx.opts.log,
    placeholder: body.stream === true,
    observer: new Observer(ANTHROPIC_TOOL_USE),
    offersTools: (body.tools?.length ?? 0) > 0,
    body: parsed.bytes,
    json: body as unknown as Record<string, unknown>,
    parsed: {
      body: encoder.encode(JSON.stringify(payload)),
      pathAndQuery: `/v1/messages${q >= 0 ? request.url.slice(q) : ""}`,
      requestedModel: String(body.model),
    },
    send,
  };
}
