/**
 * `POST /api/embed` (`input`: a string or a list → `embeddings: [[…]]`) and the older
 * `POST /api/embeddings` (`prompt` → `embedding: […]`), on the one exchange, through the
 * upstream's `/v1/embeddings`. Nothing to embed loads the model and answers an empty result.
 */

import type { ModelConfig } from "../../config/types.ts";
import { forward } from "../../proxy/forward.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Call } from "../exchange/call.ts";
import {
  admit,
  type Exchange,
  headersOf,
  runExchange,
  type SchedulingOptions,
} from "../exchange/exchange.ts";
import { parseJsonObject, readBody } from "../request/body.ts";
import { filtered } from "../request/params.ts";
import { type OllamaContext, ollamaModel } from "./chat.ts";
import { fromUpstreamText, OLLAMA, ollamaError } from "./errors.ts";
import { keepAliveMs } from "./keep-alive.ts";
import { type Clock, num, realClock } from "./lines.ts";
import { isObject, type Json } from "./options.ts";
import { modelName } from "./request.ts";
import { check, EmbedBody, EmbeddingsBody } from "./wire.ts";

const encoder = new TextEncoder();

type Route = "embed" | "embeddings";

interface Parsed {
  route: Route;
  name: string;
  inputs: string[];
  upstream: Json;
  start: number;
  clock: Clock;
}

/** The texts to embed (`input` on /api/embed, `prompt` on /api/embeddings), checked. */
function inputsOf(raw: Json, route: Route): { inputs: string[]; dimensions?: number } {
  if (route === "embeddings") {
    const p = check<EmbeddingsBody>(EmbeddingsBody, raw).prompt ?? "";
    return { inputs: p === "" ? [] : [p] };
  }
  const body = check<EmbedBody>(EmbedBody, raw);
  const input = body.input ?? [];
  const inputs = typeof input === "string" ? (input === "" ? [] : [input]) : input;
  return body.dimensions == null ? { inputs } : { inputs, dimensions: body.dimensions };
}

export async function handleEmbed(
  ctx: OllamaContext,
  request: Request,
  route: Route,
): Promise<Response> {
  const { gw, log } = ctx;
  const clock = ctx.clock ?? realClock;
  const start = clock.now();
  let scheduling: SchedulingOptions;
  let model: ModelConfig;
  let parsed: Parsed;
  let bytes: Uint8Array;
  try {
    scheduling = admit(gw, request);
    bytes = await readBody(request, gw.config.server.maxBodyBytes);
    const body = parseJsonObject(bytes);
    const name = modelName(body);
    model = await ollamaModel(gw, name, request);
    const { inputs, dimensions } = inputsOf(body, route);
    const upstream: Json = { model: model.useModelName || model.id, input: inputs };
    if (dimensions !== undefined) upstream.dimensions = dimensions;
    scheduling = { ...scheduling, keepAliveMs: keepAliveMs(body.keep_alive) };
    parsed = { route, name, inputs, upstream, start, clock };
  } catch (err) {
    return ollamaError(asQmError(err));
  }
  return runExchange<Parsed>({
    gw,
    request,
    model,
    scheduling,
    api: OLLAMA,
    log,
    body: bytes,
    parsed,
    send,
  });
}

function answer(x: Exchange<Parsed>, call: Call, vectors: number[][], promptTokens: number) {
  const headers = headersOf(x);
  call.tag(headers);
  const { route, name, start, clock } = x.parsed;
  const ns = (ms: number) => Math.max(0, Math.round(ms * 1e6));
  const body =
    route === "embeddings"
      ? { embedding: vectors[0] ?? [] }
      : {
          model: name,
          embeddings: vectors,
          total_duration: ns(clock.now() - start),
          load_duration: ns(Math.max(0, call.waitedMs)),
          prompt_eval_count: promptTokens,
        };
  headers.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body), { status: 200, headers });
}

async function send(x: Exchange<Parsed>, call: Call): Promise<Response> {
  if (x.parsed.inputs.length === 0) {
    // Nothing to embed: the model is loaded, and that is the answer.
    call.finish(false);
    return answer(x, call, [], 0);
  }
  const res = await forward({
    base: call.base,
    pathAndQuery: "/v1/embeddings",
    method: "POST",
    headers: new Headers({
      "content-type": "application/json",
      accept: "application/json",
      "accept-encoding": "identity",
    }),
    body: encoder.encode(JSON.stringify(filtered(x.model, x.parsed.upstream))),
    call,
    raw: true,
  });
  const text = await call.readText(res);
  if (res.status !== 200) {
    call.finish(true);
    return ollamaError(fromUpstreamText(res.status, text, x.model.id), headersOf(x));
  }
  const json = call.parseAnswer(text);
  const data = isObject(json) && Array.isArray(json.data) ? json.data : null;
  const vectors = data?.map((d) => (isObject(d) ? d : {})) ?? [];
  // The OpenAI API orders `data` by `index`; a server that does not is put in order here.
  vectors.sort((a, b) => (num(a.index) ?? 0) - (num(b.index) ?? 0));
  const out = vectors.map((d) => d.embedding);
  if (!data || !out.every((v) => Array.isArray(v))) {
    call.finish(true);
    const err = new QmError(
      "upstream_failed",
      `model "${x.model.id}" answered /v1/embeddings without embeddings`,
    );
    return ollamaError(err, headersOf(x));
  }
  const usage = isObject(json) && isObject(json.usage) ? json.usage : {};
  // The answer is parsed here, not relayed: its usage is told to the record.
  call.observer.usage.readUsage(usage);
  call.finish(true);
  return answer(x, call, out as number[][], num(usage.prompt_tokens) ?? 0);
}
