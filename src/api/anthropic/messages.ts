/**
 * `POST /v1/messages` end to end: read and translate the request, acquire the model (with the
 * wait-status placeholder for a cold streaming request, like the OpenAI routes), clamp
 * `max_tokens` to the context left, send the OpenAI request upstream, translate the answer
 * back, and release the lease with whether the answer ended in tool use (the scheduler's
 * agent-loop hold). Models marked `anthropic_native` are passed through (`native.ts`).
 */

import { failureLogLine, upstreamFailure } from "../../proxy/causes.ts";
import { forward } from "../../proxy/forward.ts";
import { placeholderStream } from "../../proxy/wait-status.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import { linkToClient } from "../client-link.ts";
import type { AcquireHooks, Lease } from "../gateway.ts";
import { schedulingHeaders } from "../request/scheduling.ts";
import { type CallGuards, callGuards } from "../upstream-call.ts";
import type { AnthropicRequest } from "./context.ts";
import { releaseOnce, SSE_HEADERS } from "./context.ts";
import { anthropicError, errorEvent, fromQmError, fromUpstream } from "./errors.ts";
import { messageId, requestId } from "./ids.ts";
import { handleNative } from "./native.ts";
import { type ParsedRequest, readRequest } from "./request-body.ts";
import { translatedStream } from "./stream-body.ts";
import { estimatePrompt } from "./translate/estimate.ts";
import type { OaiChatRequest } from "./translate/openai-types.ts";
import { profileFromCommand } from "./translate/profile.ts";
import { type Prompt, toOpenAI } from "./translate/request.ts";
import { fromOpenAI } from "./translate/response.ts";
import { StreamTranslator } from "./translate/stream.ts";
import type { ToolInput } from "./translate/tool-json.ts";
import { answerCap } from "./upstream.ts";
import { type MessagesRequest, MessagesRequestSchema } from "./wire.ts";

const encoder = new TextEncoder();

type Settled = { ok: true; res: Response } | { ok: false; error: unknown } | null;

/** The promise's outcome if it settles within `ms`, else null (it keeps running). */
function settleWithin(p: Promise<Response>, ms: number): Promise<Settled> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    p.then(
      (res) => {
        clearTimeout(timer);
        resolve({ ok: true, res });
      },
      (error) => {
        clearTimeout(timer);
        resolve({ ok: false, error });
      },
    );
  });
}

export async function handleMessages(ctx: AnthropicRequest): Promise<Response> {
  const { gw, request, opts } = ctx;
  const headers = new Headers({ "request-id": requestId() });
  let parsed: ParsedRequest<MessagesRequest>;
  let oai: OaiChatRequest;
  // `X-QM-Hold-Ms` / `X-QM-Patience-Ms`, as on the OpenAI routes.
  let asks: Pick<AcquireHooks, "holdMs" | "patienceMs">;
  try {
    if (gw.shuttingDown) throw new QmError("shutting_down", "qm is shutting down");
    asks = schedulingHeaders(request.headers);
    parsed = await readRequest(gw, request, MessagesRequestSchema);
    ctx.noIdleTimeout();
    if (parsed.model.anthropicNative) return handleNative(ctx, parsed, headers, asks);
    const { model, body } = parsed;
    oai = toOpenAI(body, {
      profile: profileFromCommand(model.argv),
      upstreamModel: model.useModelName || body.model,
    });
  } catch (err) {
    return anthropicError(asQmError(err), headers);
  }
  const { model, body } = parsed;
  const profile = profileFromCommand(model.argv);
  const prompt: Prompt = { messages: oai.messages, tools: { tools: oai.tools } };
  const loaded = gw.modelState(model.id) === "ready";
  headers.set("x-qm-model", model.id);
  headers.set("x-qm-model-loaded", String(loaded));
  const client = linkToClient(request);
  const detach = client.detach;

  const shape = {
    id: messageId(),
    model: body.model,
    stopSequences: body.stop_sequences ?? [],
    inputEstimate: estimatePrompt(prompt),
    onToolInput: (name: string, how: ToolInput["how"]) =>
      opts.log.warn(
        `anthropic: model "${model.id}" called tool "${name}" with invalid JSON arguments ` +
          (how === "repaired" ? "(repaired)" : "(sent as {})"),
      ),
  };

  /** After the grant: clamp `max_tokens`, then send. Releases the lease if nothing came back. */
  const open = async (
    lease: Lease,
    release: (toolCalls: boolean) => void,
    guards: CallGuards,
  ): Promise<Response> => {
    try {
      const cap = await answerCap(model, profile, prompt, oai.max_tokens, client.signal);
      const payload = cap === null ? oai : { ...oai, max_tokens: Math.min(oai.max_tokens, cap) };
      return await forward({
        base: lease.model.proxy, // the config it started with (its port may have moved)
        pathAndQuery: "/v1/chat/completions",
        method: "POST",
        // A fresh set: no client header (anthropic-version, anthropic-beta, x-stainless-*)
        // means anything to an OpenAI server.
        headers: new Headers({
          "content-type": "application/json",
          accept: oai.stream ? "text/event-stream" : "application/json",
          // forward() relays bodies still encoded; this one is parsed, so it must be plain.
          "accept-encoding": "identity",
        }),
        body: encoder.encode(JSON.stringify(payload)),
        signal: client.signal,
        ...guards,
        // The translator reads the upstream's body itself and reports the end.
        raw: oai.stream,
        onEnd: () => {},
      });
    } catch (err) {
      release(false);
      detach();
      throw err;
    }
  };

  if (oai.stream) {
    const streamFor = (
      upstream: Response | Promise<Response>,
      release: (toolCalls: boolean) => void,
      guards: CallGuards,
    ) =>
      translatedStream({
        upstream,
        translator: new StreamTranslator(shape),
        model: model.id,
        pingMs: opts.pingMs,
        deadline: guards.deadline,
        logFailure: (error) =>
          guards.log.warn(failureLogLine(model.id, error, guards.stderrTail())),
        onEnd: (toolCalls) => {
          detach();
          release(toolCalls);
        },
        onCancel: client.abort,
      });
    for (const [k, v] of Object.entries(SSE_HEADERS)) headers.set(k, v);

    if (!loaded && model.sendLoadingState) {
      const stream = placeholderStream({
        model: model.id,
        start: async (progress) => {
          const lease = await gw.acquire(model, client.signal, { ...progress, ...asks });
          const release = releaseOnce(lease);
          const guards = callGuards(gw, model, opts);
          return new Response(streamFor(open(lease, release, guards), release, guards));
        },
        onCancel: client.abort,
        renderError: (err) => {
          const f = fromQmError(asQmError(err));
          return encoder.encode(errorEvent(f.type, f.message));
        },
      });
      return new Response(stream, { status: 200, headers });
    }

    try {
      const lease = await gw.acquire(model, client.signal, asks);
      headers.set("x-qm-wait-ms", String(lease.waitedMs));
      const release = releaseOnce(lease);
      const guards = callGuards(gw, model, opts);
      const pending = open(lease, release, guards);
      // A quick refusal (context overflow, bad grammar) stays an HTTP error; a slow start
      // (llama-server holds its headers through prefill) gets a 200 and pings meanwhile.
      const early = await settleWithin(pending, opts.pingMs);
      if (early && !early.ok) throw early.error;
      if (early && early.res.status !== 200) {
        const text = await early.res.text().catch(() => "");
        // The refusal is the whole exchange (an answer, if not a welcome one): no stream
        // follows to end the deadline.
        guards.deadline?.end(true);
        release(false);
        detach();
        const retry = early.res.headers.get("retry-after");
        return anthropicError(fromUpstream(early.res.status, text, model.id, retry), headers);
      }
      return new Response(streamFor(early ? early.res : pending, release, guards), {
        status: 200,
        headers,
      });
    } catch (err) {
      detach();
      headers.delete("content-type");
      return anthropicError(asQmError(err), headers);
    }
  }

  try {
    const lease = await gw.acquire(model, client.signal, asks);
    headers.set("x-qm-wait-ms", String(lease.waitedMs));
    const release = releaseOnce(lease);
    try {
      const res = await open(lease, release, callGuards(gw, model, opts));
      const text = await res.text().catch((error: unknown) => {
        throw new QmError("upstream_failed", upstreamFailure(model.id, error), { cause: error });
      });
      if (res.status !== 200) {
        const retry = res.headers.get("retry-after");
        return anthropicError(fromUpstream(res.status, text, model.id, retry), headers);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new QmError("upstream_failed", `model "${model.id}" answered with invalid JSON`);
      }
      const message = fromOpenAI(json, shape);
      release(message.stop_reason === "tool_use");
      headers.set("content-type", "application/json");
      return new Response(JSON.stringify(message), { status: 200, headers });
    } finally {
      release(false);
    }
  } catch (err) {
    return anthropicError(asQmError(err), headers);
  } finally {
    detach();
  }
}
