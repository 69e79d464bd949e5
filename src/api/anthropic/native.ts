/**
 * `anthropic_native = true`: the upstream speaks `/v1/messages` itself (llama.cpp, vLLM and
 * mistral.rs all do), so the request goes through untranslated and the answer comes back as
 * it is. qm still owns what is around it: the model decision and wait status, the Anthropic
 * error envelope for failures (native servers often answer errors OpenAI-style), and whether
 * the answer ended in tool use, read off the bytes as they pass.
 */

import { forward } from "../../proxy/forward.ts";
import { placeholderStream } from "../../proxy/wait-status.ts";
import { asQmError } from "../../shared/errors.ts";
import { linkToClient } from "../client-link.ts";
import type { AcquireHooks, Lease } from "../gateway.ts";
import { callGuards } from "../upstream-call.ts";
import type { AnthropicRequest } from "./context.ts";
import { releaseOnce, SSE_HEADERS } from "./context.ts";
import { anthropicError, errorEvent, fromQmError, fromUpstream } from "./errors.ts";
import type { ParsedRequest } from "./request-body.ts";
import type { MessagesRequest } from "./wire.ts";

const encoder = new TextEncoder();

/** Watches relayed bytes for `"stop_reason":"tool_use"` (JSON body or `message_delta`). */
function toolUseSniffer() {
  const decoder = new TextDecoder();
  let tail = "";
  let found = false;
  return {
    feed(chunk: Uint8Array) {
      if (found) return;
      const text = tail + decoder.decode(chunk, { stream: true });
      found = /"stop_reason"\s*:\s*"tool_use"/.test(text);
      // Keep enough to catch the pattern split across two chunks.
      tail = text.slice(-64);
    },
    get toolUse() {
      return found;
    },
  };
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
  try {
    const json = JSON.parse(text) as { type?: unknown; error?: { type?: unknown } };
    if (json.type === "error" && typeof json.error?.type === "string") {
      headers.set("content-type", "application/json");
      return new Response(text, { status: res.status, headers });
    }
  } catch {
    // not JSON: rewrap below
  }
  return anthropicError(
    fromUpstream(res.status, text, model, res.headers.get("retry-after")),
    headers,
  );
}

export async function handleNative(
  ctx: AnthropicRequest,
  parsed: ParsedRequest<MessagesRequest>,
  headers: Headers,
  asks: Pick<AcquireHooks, "holdMs" | "patienceMs">,
): Promise<Response> {
  const { gw, request } = ctx;
  const { model, body } = parsed;
  const q = request.url.indexOf("?");
  const pathAndQuery = `/v1/messages${q >= 0 ? request.url.slice(q) : ""}`;
  const payload = model.useModelName ? { ...body, model: model.useModelName } : body;
  const loaded = gw.modelState(model.id) === "ready";
  headers.set("x-qm-model", model.id);
  headers.set("x-qm-model-loaded", String(loaded));
  const client = linkToClient(request);
  const detach = client.detach;

  const send = (lease: Lease): Promise<Response> => {
    const release = releaseOnce(lease);
    const sniff = toolUseSniffer();
    return forward({
      base: lease.model.proxy, // the config it started with (its port may have moved)
      pathAndQuery,
      method: "POST",
      headers: nativeHeaders(request.headers),
      body: encoder.encode(JSON.stringify(payload)),
      signal: client.signal,
      ...callGuards(gw, model, ctx.opts),
      // A native stream is Anthropic's: so is the event that ends a broken one.
      renderFailure: (err) => {
        const f = fromQmError(err);
        return encoder.encode(errorEvent(f.type, f.message));
      },
      onChunk: sniff.feed,
      onEnd: () => {
        detach();
        release(sniff.toolUse);
      },
    });
  };

  if (body.stream === true && !loaded && model.sendLoadingState) {
    const stream = placeholderStream({
      model: model.id,
      start: async (progress) => {
        const res = await send(await gw.acquire(model, client.signal, { ...progress, ...asks }));
        if (res.status < 400) return res;
        const text = await res.text().catch(() => "");
        const f = fromUpstream(res.status, text, model.id);
        return new Response(errorEvent(f.type, f.message));
      },
      onCancel: client.abort,
      renderError: (err) => {
        const f = fromQmError(asQmError(err));
        return encoder.encode(errorEvent(f.type, f.message));
      },
    });
    for (const [k, v] of Object.entries(SSE_HEADERS)) headers.set(k, v);
    return new Response(stream, { status: 200, headers });
  }

  try {
    const lease = await gw.acquire(model, client.signal, asks);
    headers.set("x-qm-wait-ms", String(lease.waitedMs));
    const res = await send(lease);
    if (res.status >= 400) return await refusal(res, model.id, headers);
    for (const [k, v] of headers) res.headers.set(k, v);
    return res;
  } catch (err) {
    detach();
    return anthropicError(asQmError(err), headers);
  }
}
