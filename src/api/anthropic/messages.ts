/**
 * `POST /v1/messages` end to end, on the one exchange (`../exchange/`): read and translate the
 * request, acquire the model (with the wait-status placeholder for a cold streaming request,
 * like the OpenAI routes), clamp `max_tokens` to the context left, send the OpenAI request
 * upstream, translate the answer back, and end the call with whether the answer ended in tool
 * use (the scheduler's agent-loop hold). Models marked `anthropic_native` are passed through
 * (`native.ts`).
 */

import { asQmError } from "../../shared/errors.ts";
import { type Profile, profileOf } from "../chat/profile.ts";
import { readRefusal } from "../chat/refusal.ts";
import { sendChat, streamFor } from "../chat/send.ts";
import type { ToolInput } from "../chat/tool-json.ts";
import type { OaiChatRequest } from "../chat/wire.ts";
import type { Call } from "../exchange/call.ts";
import { earlyStream } from "../exchange/early-stream.ts";
import {
  admit,
  type Exchange,
  headersOf,
  runExchange,
  type SchedulingOptions,
} from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import { filtered } from "../request/params.ts";
import type { AnthropicRequest } from "./context.ts";
import { ANTHROPIC, anthropicError, fromUpstream } from "./errors.ts";
import { messageId, requestId } from "./ids.ts";
import { nativeExchange } from "./native.ts";
import { type ParsedRequest, readRequest } from "./request-body.ts";
import { estimatePrompt } from "./translate/estimate.ts";
import { type Prompt, toOpenAI, translatePrompt } from "./translate/request.ts";
import { fromOpenAI, type ResponseOptions } from "./translate/response.ts";
import { StreamTranslator } from "./translate/stream.ts";
import { answerCap, countPromptTokens } from "./upstream.ts";
import { type MessagesRequest, MessagesRequestSchema } from "./wire.ts";

interface Translated {
  ctx: AnthropicRequest;
  oai: OaiChatRequest;
  profile: Profile;
  prompt: Prompt;
  shape: ResponseOptions;
}

export async function handleMessages(ctx: AnthropicRequest): Promise<Response> {
  const { gw, request, opts } = ctx;
  const headers = new Headers({ "request-id": requestId() });
  let scheduling: SchedulingOptions;
  let parsed: ParsedRequest<MessagesRequest>;
  let oai: OaiChatRequest;
  let prompt: Prompt;
  try {
    scheduling = admit(gw, request);
    parsed = await readRequest(gw, request, MessagesRequestSchema);
    if (parsed.model.anthropicNative)
      return runExchange(nativeExchange(ctx, parsed, headers, scheduling));
    const { model, body } = parsed;
    const profile = profileOf(model);
    prompt = translatePrompt(body, profile);
    oai = toOpenAI(body, { profile, upstreamModel: model.useModelName || body.model }, prompt);
  } catch (err) {
    return anthropicError(asQmError(err), headers);
  }
  const { model, body } = parsed;
  const shape: ResponseOptions = {
    id: messageId(),
    model: body.model,
    stopSequences: body.stop_sequences ?? [],
    inputTokens: estimatePrompt(prompt),
    onToolInput: (name: string, how: ToolInput["how"]) =>
      opts.log.warn(
        `anthropic: model "${model.id}" called tool "${name}" with invalid JSON arguments ` +
          (how === "repaired" ? "(repaired)" : "(sent as {})"),
      ),
  };
  return runExchange<Translated>({
    gw,
    request,
    model,
    scheduling,
    headers,
    api: ANTHROPIC,
    log: opts.log,
    placeholder: oai.stream === true,
    // The translator parses the answer anyway: it tells the observer how it ended.
    observer: new Observer(null),
    body: parsed.bytes,
    parsed: { ctx, oai, profile: profileOf(model), prompt, shape },
    send: sendTranslated,
  });
}

/**
 * Clamps `max_tokens` to the context left, then sends; the body is read by the caller. A
 * stream's `message_start` goes out before the upstream reports usage, so for a stream the
 * prompt is counted first by the upstream's own template and tokenizer (count_tokens' way;
 * the model is ready, its lease held): `input_tokens` is then exact, and the estimate is left
 * for an upstream that cannot count.
 */
async function open(x: Exchange<Translated>, call: Call): Promise<Response> {
  const { oai, profile, prompt, shape } = x.parsed;
  const { timers } = x.parsed.ctx.opts;
  const counted = oai.stream
    ? await countPromptTokens(x.model, profile, prompt, call.signal, timers).catch(() => null)
    : undefined;
  if (typeof counted === "number") shape.inputTokens = counted;
  const cap = await answerCap(
    x.model,
    profile,
    prompt,
    oai.max_tokens,
    call.signal,
    timers,
    counted,
  );
  const payload = filtered(
    x.model,
    cap === null ? oai : { ...oai, max_tokens: Math.min(oai.max_tokens, cap) },
  );
  return sendChat(call, "/v1/chat/completions", payload, oai.stream);
}

function sendTranslated(x: Exchange<Translated>, call: Call): Promise<Response> {
  call.tag(headersOf(x));
  return x.parsed.oai.stream ? sendStream(x, call) : sendWhole(x, call);
}

function sendStream(x: Exchange<Translated>, call: Call): Promise<Response> {
  const { opts } = x.parsed.ctx;
  const pace = { pingMs: opts.pingMs, timers: opts.timers };
  return earlyStream(x, call, {
    open: () => open(x, call),
    ...pace,
    body: (upstream) => streamFor(call, new StreamTranslator(x.parsed.shape), upstream, pace),
    refusal: (res, text, headers) =>
      anthropicError(
        fromUpstream(readRefusal(res.status, text, res.headers.get("retry-after")), x.model.id),
        headers,
      ),
  });
}

async function sendWhole(x: Exchange<Translated>, call: Call): Promise<Response> {
  const res = await open(x, call);
  const id = x.model.id;
  const text = await call.readText(res);
  if (res.status !== 200) {
    call.finish(true);
    const r = readRefusal(res.status, text, res.headers.get("retry-after"));
    return anthropicError(fromUpstream(r, id), headersOf(x));
  }
  const json = call.parseAnswer(text);
  call.observer.usage.readAnswer(json);
  const message = fromOpenAI(json, x.parsed.shape);
  call.observer?.ended(message.stop_reason === "tool_use");
  call.finish(true);
  headersOf(x).set("content-type", "application/json");
  return new Response(JSON.stringify(message), { status: 200, headers: headersOf(x) });
}
