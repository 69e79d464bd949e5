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
import { estimateOutput } from "./translate/finish.ts";
import { type Prompt, toOpenAI, translatePrompt } from "./translate/request.ts";
import { fromOpenAI } from "./translate/response.ts";
import { type StreamOptions, StreamTranslator } from "./translate/stream.ts";
import { answerCap, countPromptTokens, countTextTokens } from "./upstream.ts";
import { type MessagesRequest, MessagesRequestSchema } from "./wire.ts";

interface Translated {
  ctx: AnthropicRequest;
  oai: OaiChatRequest;
  profile: Profile;
  prompt: Prompt;
  shape: StreamOptions;
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
  const shape: StreamOptions = {
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
    offersTools: (body.tools?.length ?? 0) > 0,
    body: parsed.bytes,
    json: body as unknown as Record<string, unknown>,
    parsed: { ctx, oai, profile: profileOf(model), prompt, shape },
    send: sendTranslated,
  });
}

/**
 * Clamps `max_tokens` to the context left, then sends; the body is read by the caller. A
 * stream's `message_start` goes out before the upstream reports usage, so for a stream the
 * prompt is also counted by the upstream's own template and tokenizer (count_tokens' way; the
 * model is ready, its lease held): `input_tokens` is then exact, and the estimate is left for
 * an upstream that cannot count. The count runs beside the chat request, not before it — the
 * first token waits for neither — unless the cap needs it (a prompt whose upper bound does
 * not fit beside `max_tokens`).
 */
async function open(x: Exchange<Translated>, call: Call): Promise<Response> {
  const { oai, profile, prompt, shape } = x.parsed;
  const { timers } = x.parsed.ctx.opts;
  const counting = oai.stream
    ? countPromptTokens(x.model, profile, prompt, call.signal, timers).catch(() => null)
    : undefined;
  const cap = await answerCap(
    x.model,
    profile,
    prompt,
    oai.max_tokens,
    call.signal,
    timers,
    counting,
  );
  const payload = filtered(
    x.model,
    cap === null ? oai : { ...oai, max_tokens: Math.min(oai.max_tokens, cap) },
  );
  const sent = sendChat(call, "/v1/chat/completions", payload, oai.stream);
  if (counting === undefined) return sent;
  const [res, counted] = await Promise.all([sent, counting]);
  if (typeof counted === "number") shape.inputTokens = counted;
  return res;
}

function sendTranslated(x: Exchange<Translated>, call: Call): Promise<Response> {
  call.tag(headersOf(x));
  return x.parsed.oai.stream ? sendStream(x, call) : sendWhole(x, call);
}

/** The tokens of an answer's delivered text, by the upstream's tokenizer (null: it cannot). */
function outputCounter(x: Exchange<Translated>, call: Call) {
  return (delivered: string) =>
    delivered === ""
      ? Promise.resolve(0)
      : countTextTokens(
          x.model,
          x.parsed.profile,
          delivered,
          call.signal,
          x.parsed.ctx.opts.timers,
        );
}

function sendStream(x: Exchange<Translated>, call: Call): Promise<Response> {
  const { opts } = x.parsed.ctx;
  const pace = { pingMs: opts.pingMs, timers: opts.timers };
  // The same object `open` writes the prompt's count into, before message_start goes out.
  const shape = x.parsed.shape;
  shape.countOutput = outputCounter(x, call);
  return earlyStream(x, call, {
    open: () => open(x, call),
    ...pace,
    body: (upstream) => streamFor(call, new StreamTranslator(shape), upstream, pace),
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
  if (message.stop_reason === "stop_sequence") {
    // The upstream generated past the stop sequence; what the client gets ends before it. Both
    // ways, usage counts what was delivered (translate/stream.ts does the same).
    const delivered = message.content
      .map((b) => (b.type === "thinking" ? b.thinking : b.type === "text" ? b.text : ""))
      .join("");
    const n = await outputCounter(x, call)(delivered);
    message.usage.output_tokens = n ?? estimateOutput(delivered.length);
  }
  call.observer?.ended(message.stop_reason === "tool_use");
  call.finish(true);
  headersOf(x).set("content-type", "application/json");
  return new Response(JSON.stringify(message), { status: 200, headers: headersOf(x) });
}
