/**
 * `POST /api/chat` and `POST /api/generate` on the one exchange (`../exchange/`): read and
 * translate the request (`request.ts`), resolve the model (`options.num_ctx` → the
 * `model?ctx=N` variant), acquire it, send the OpenAI request upstream and translate the
 * answer back — NDJSON lines (`stream.ts`) or one object. A request with nothing to answer
 * loads the model (`keep_alive: 0`: unloads it), as Ollama's do.
 *
 * No wait-status placeholder: Ollama's clients read every line as JSON, and NDJSON has no
 * comment line, so a cold request gets its headers once the model is granted — which is what
 * Ollama itself does while it loads a model. See design.md.
 */

import type { ModelConfig } from "../../config/types.ts";
import { MAX_CTX, MIN_CTX, withContextSize } from "../../config/variant.ts";
import { asQmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { profileOf } from "../chat/profile.ts";
import { sendChat, streamFor } from "../chat/send.ts";
import { keyOf } from "../edge/caller.ts";
import { visible } from "../edge/visible.ts";
import type { Call } from "../exchange/call.ts";
import {
  admit,
  type Exchange,
  headersOf,
  runExchange,
  type SchedulingOptions,
} from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import type { Gateway } from "../gateway.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { resolveModel } from "../request/model.ts";
import { filtered } from "../request/params.ts";
import { fromCompletion } from "./answer.ts";
import { fromUpstreamText, OLLAMA, ollamaError } from "./errors.ts";
import { type Clock, type Kind, lineObject, realClock, type Timing } from "./lines.ts";
import { chatRequest, generateRequest, modelName, type OllamaRequest } from "./request.ts";
import { NdjsonTranslator } from "./stream.ts";

const NDJSON = "application/x-ndjson";

interface Parsed {
  kind: Kind;
  req: OllamaRequest;
  timing: Timing;
  clock: Clock;
}

export interface OllamaContext {
  gw: Gateway;
  log: Logger;
  clock?: Clock | undefined;
}

/** A name an Ollama client sends: an id or alias, or one with Ollama's default `:latest` tag. */
export function ollamaModel(
  gw: Gateway,
  name: unknown,
  request: Request,
): ModelConfig | Promise<ModelConfig> {
  if (typeof name === "string" && name.endsWith(":latest") && !gw.resolve(name)) {
    const bare = gw.resolve(name.slice(0, -":latest".length));
    if (bare && visible(gw, keyOf(request), bare)) return bare;
  }
  return resolveModel(gw, name, request);
}

/**
 * The model at `options.num_ctx`: the model itself when its command already runs at that size,
 * else its `?ctx=N` variant (a process of its own, minted on first use). Only llama.cpp's
 * context flag is known, so for other servers `num_ctx` is left to the model's own setting.
 */
async function atContext(
  gw: Gateway,
  model: ModelConfig,
  numCtx: number | undefined,
  request: Request,
) {
  if (numCtx === undefined || model.variantOf) return model;
  if (profileOf(model) !== "llamacpp") return model;
  if (numCtx < MIN_CTX || numCtx > MAX_CTX) {
    throw badRequest(
      `"options.num_ctx" must be from ${MIN_CTX} to ${MAX_CTX}, got ${numCtx}`,
      "options.num_ctx",
    );
  }
  const argv = model.argv;
  const same = withContextSize(argv, numCtx);
  if (same.length === argv.length && same.every((a, i) => a === argv[i])) return model;
  return resolveModel(gw, `${model.id}?ctx=${numCtx}`, request);
}

export async function handleGenerate(
  ctx: OllamaContext,
  request: Request,
  kind: Kind,
): Promise<Response> {
  const { gw, log } = ctx;
  const clock = ctx.clock ?? realClock;
  const start = clock.now();
  let scheduling: SchedulingOptions;
  let req: OllamaRequest;
  let model: ModelConfig;
  let bytes: Uint8Array;
  let json: Record<string, unknown>;
  try {
    scheduling = admit(gw, request);
    bytes = await readBody(request, gw.config.server.maxBodyBytes);
    const body = parseJsonObject(bytes);
    json = body;
    const base = await ollamaModel(gw, modelName(body), request);
    const profile = profileOf(base);
    const upstreamModel = base.useModelName || base.id;
    req = (kind === "chat" ? chatRequest : generateRequest)(body, profile, upstreamModel);
    model = await atContext(gw, base, req.numCtx, request);
  } catch (err) {
    return ollamaError(asQmError(err));
  }
  if (req.loadOnly && req.keepAliveMs === 0) return unload(ctx, model, req, kind);
  return runExchange<Parsed>({
    gw,
    request,
    model,
    scheduling: { ...scheduling, keepAliveMs: req.keepAliveMs },
    api: OLLAMA,
    log,
    // The translator parses the answer anyway: it tells the observer how it ended.
    observer: new Observer(null),
    offersTools: req.offersTools,
    body: bytes,
    json,
    parsed: { kind, req, clock, timing: { start, granted: start, sent: start } },
    send: req.loadOnly ? loaded : send,
  });
}

/** `{"model": …}` alone: the model is loaded; the answer says so (`done_reason: "load"`). */
async function loaded(x: Exchange<Parsed>, call: Call): Promise<Response> {
  call.finish(false);
  return lastLine(x, call, "load");
}

/** `{"model": …, "keep_alive": 0}` alone: the model is unloaded now (`done_reason: "unload"`). */
function unload(ctx: OllamaContext, model: ModelConfig, req: OllamaRequest, kind: Kind): Response {
  try {
    ctx.gw.unload(model.id);
  } catch (err) {
    return ollamaError(asQmError(err));
  }
  const clock = ctx.clock ?? realClock;
  const line = lineObject(req.name, clock.iso(), kind, { content: "" }, { done_reason: "unload" });
  return Response.json(line, { headers: { "x-qm-model": model.id } });
}

function lastLine(x: Exchange<Parsed>, call: Call, reason: string): Response {
  const headers = headersOf(x);
  call.tag(headers);
  const { req, kind, clock } = x.parsed;
  const line = lineObject(req.name, clock.iso(), kind, { content: "" }, { done_reason: reason });
  headers.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(line), { status: 200, headers });
}

async function send(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const { req, timing, clock } = x.parsed;
  timing.granted = timing.start + Math.max(0, call.waitedMs);
  const headers = headersOf(x);
  call.tag(headers);
  timing.sent = clock.now();
  const res = await sendChat(call, req.path, filtered(x.model, req.upstream), req.stream);
  if (res.status !== 200 || !res.body) {
    const text = await call.readText(res);
    // The refusal is the whole exchange (an answer, if not a welcome one).
    call.finish(true);
    return ollamaError(fromUpstreamText(res.status, text, x.model.id), headers);
  }
  return req.stream ? sendStream(x, call, res, headers) : sendWhole(x, call, res, headers);
}

function sendStream(x: Exchange<Parsed>, call: Call, res: Response, headers: Headers): Response {
  const { req, kind, timing, clock } = x.parsed;
  const translator = new NdjsonTranslator({
    kind,
    model: req.name,
    think: req.think,
    timing,
    clock,
  });
  // No keep-alive: NDJSON has no line a client would skip.
  const body = streamFor(call, translator, res);
  headers.set("content-type", NDJSON);
  return new Response(body, { status: 200, headers });
}

async function sendWhole(
  x: Exchange<Parsed>,
  call: Call,
  res: Response,
  headers: Headers,
): Promise<Response> {
  const { req, kind, timing, clock } = x.parsed;
  const json = call.parseAnswer(await call.readText(res));
  call.observer.usage.readAnswer(json);
  const { body, toolCalls } = fromCompletion(json, {
    kind,
    model: req.name,
    think: req.think,
    timing,
    createdAt: clock.iso(),
    end: clock.now(),
  });
  call.observer?.ended(toolCalls);
  call.finish(true);
  headers.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body), { status: 200, headers });
}
