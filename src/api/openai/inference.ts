import type { ModelConfig } from "../../config/types.ts";
import { OPENAI_TOOL_CALLS } from "../../proxy/end-scan.ts";
import { forward } from "../../proxy/forward.ts";
import { asQmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { profileOf } from "../chat/profile.ts";
import type { Call } from "../exchange/call.ts";
import {
  admit,
  type Exchange,
  type ExchangeApi,
  runExchange,
  type SchedulingOptions,
} from "../exchange/exchange.ts";
import { Observer } from "../exchange/observer.ts";
import type { Gateway } from "../gateway.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { resolveModel } from "../request/model.ts";
import { applyFormParams, applyParams } from "../request/params.ts";
import { openaiError } from "./errors.ts";

export interface InferenceRequest {
  gw: Gateway;
  request: Request;
  /** Path and query sent upstream (same as the client's for OpenAI routes). */
  pathAndQuery: string;
  /** The route's path (without the query): only text-generation routes answer in SSE. */
  route: string;
  log: Logger;
}

const encoder = new TextEncoder();

/**
 * Routes whose `stream: true` answer is SSE, so a wait-status placeholder can stand in front
 * of it. Elsewhere (embeddings, rerank, images) `stream` means nothing to the upstream, whose
 * JSON answer must not arrive wrapped in an event stream.
 */
const STREAMING_PATHS = new Set(["/v1/chat/completions", "/v1/completions"]);

export const OPENAI: ExchangeApi = { name: "openai", error: openaiError };
/** `/upstream/{model}/…`: a model's own API, failures in the OpenAI envelope. */
export const UPSTREAM: ExchangeApi = { name: "upstream", error: openaiError };
/** `POST /api/models/{id}/load`. */
export const LOAD: ExchangeApi = { name: "load", error: openaiError };

interface Parsed {
  stream: boolean;
  /** The `model` the client sent, which its answer carries (multipart answers keep theirs). */
  requestedModel: string | undefined;
  body: Uint8Array;
  /** The request offers tools: only then can the answer end in tool calls. */
  offersTools: boolean;
  /** The headers sent upstream (the client's, or with a new multipart boundary). */
  headers: Headers;
  pathAndQuery: string;
  /** qm asked for the stream's usage event on the client's behalf: it is cut from the answer. */
  stripUsage: boolean;
}

/**
 * Reads the body once, finds the model; re-encodes it only when the model's config changes
 * it (`use_model_name`, `strip_params`, `set_params`).
 */
async function parse(
  gw: Gateway,
  request: Request,
  pathAndQuery: string,
  route: string,
): Promise<{
  model: ModelConfig;
  parsed: Parsed;
  bytes: Uint8Array;
  json?: Record<string, unknown>;
}> {
  const bytes = await readBody(request, gw.config.server.maxBodyBytes);
  const type = request.headers.get("content-type") ?? "";
  if (type.startsWith("multipart/form-data")) {
    return { ...(await parseMultipart(gw, request, bytes, type, pathAndQuery)), bytes };
  }
  const obj = parseJsonObject(bytes);
  const named = resolveModel(gw, obj.model, request);
  const model = named instanceof Promise ? await named : named;
  const stream = obj.stream === true;
  const requestedModel = obj.model as string;
  const offersTools = nonEmpty(obj.tools) || nonEmpty(obj.functions);
  let body = bytes;
  const renamed = model.useModelName !== "";
  if (renamed) obj.model = model.useModelName;
  const usage = stream && STREAMING_PATHS.has(route) ? usageAsk(model, obj) : "as-is";
  if (applyParams(model, obj) || renamed || usage === "set") {
    body = encoder.encode(JSON.stringify(obj));
  } else if (usage === "insert") {
    body = withIncludeUsage(bytes);
  }
  const parsed = {
    stream,
    requestedModel,
    body,
    offersTools,
    headers: request.headers,
    pathAndQuery,
    stripUsage: usage !== "as-is",
  };
  return { model, parsed, bytes, json: obj };
}

/**
 * Every stream should state its token counts (the activity log and `/metrics` read them), so
 * qm asks for the usage event the client did not ask for (and cuts it from the answer) —
 * except from llama-server, whose last chunk always carries its `timings`. "set": added to the
 * client's own `stream_options`, which the body re-encode then carries; "insert": the body
 * has no `stream_options`, so the field goes in as bytes (no re-encode); "as-is": nothing to do.
 */
function usageAsk(model: ModelConfig, obj: Record<string, unknown>): "set" | "insert" | "as-is" {
  const options = obj.stream_options;
  if (options === undefined) {
    if (profileOf(model) === "llamacpp") return "as-is";
    obj.stream_options = { include_usage: true };
    return "insert";
  }
  if (typeof options !== "object" || options === null || Array.isArray(options)) return "as-is";
  const o = options as Record<string, unknown>;
  if (o.include_usage === true || profileOf(model) === "llamacpp") return "as-is";
  o.include_usage = true;
  return "set";
}

const INCLUDE_USAGE = encoder.encode('"stream_options":{"include_usage":true},');

/** A JSON object's bytes with `"stream_options"` as its first field (the body is an object). */
export function withIncludeUsage(bytes: Uint8Array): Uint8Array {
  const open = bytes.indexOf(0x7b);
  let next = open + 1;
  while (next < bytes.length && isJsonSpace(bytes[next]!)) next++;
  // `{}` has no field for the comma to precede.
  const insert = bytes[next] === 0x7d ? INCLUDE_USAGE.subarray(0, -1) : INCLUDE_USAGE;
  const out = new Uint8Array(bytes.length + insert.length);
  out.set(bytes.subarray(0, open + 1));
  out.set(insert, open + 1);
  out.set(bytes.subarray(open + 1), open + 1 + insert.length);
  return out;
}

function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

function nonEmpty(v: unknown): boolean {
  return Array.isArray(v) && v.length > 0;
}

async function parseMultipart(
  gw: Gateway,
  request: Request,
  bytes: Uint8Array,
  type: string,
  pathAndQuery: string,
): Promise<{ model: ModelConfig; parsed: Parsed }> {
  const form = await new Response(bytes, { headers: { "content-type": type } })
    .formData()
    .catch(() => null);
  if (!form) throw badRequest("request body is not valid multipart/form-data");
  const model = await resolveModel(gw, form.get("model"), request);
  const stream = form.get("stream") === "true";
  const renamed = model.useModelName !== "";
  if (renamed) form.set("model", model.useModelName);
  if (!applyFormParams(model, form) && !renamed) {
    return {
      model,
      parsed: {
        stream,
        requestedModel: undefined,
        body: bytes,
        offersTools: false,
        headers: request.headers,
        pathAndQuery,
        stripUsage: false,
      },
    };
  }
  // Re-encode: the boundary changes, so the content-type sent upstream must follow.
  const rebuilt = new Response(form as never);
  const headers = new Headers(request.headers);
  headers.set("content-type", rebuilt.headers.get("content-type") ?? type);
  const body = new Uint8Array(await rebuilt.arrayBuffer());
  return {
    model,
    parsed: {
      stream,
      requestedModel: undefined,
      body,
      offersTools: false,
      headers,
      pathAndQuery,
      stripUsage: false,
    },
  };
}

/** Chat and text completion streams end with `data: [DONE]`; one without it was cut short. */
const REQUIRE_DONE = { requireDone: true };
const NO_DONE = { requireDone: false };
const COMPLETIONS = /^\/v1\/(?:chat\/)?completions(?:\?|$)/;

function send(x: Exchange<Parsed>, call: Call): Promise<Response> {
  const p = x.parsed;
  return forward({
    base: call.base,
    pathAndQuery: p.pathAndQuery,
    method: x.request.method,
    headers: p.headers,
    body: p.body,
    call,
    answerModel: p.requestedModel,
    checkSse: COMPLETIONS.test(p.pathAndQuery) ? REQUIRE_DONE : NO_DONE,
    stripUsage: p.stripUsage,
  });
}

/** Handles one OpenAI inference request end to end; always returns a Response. */
export async function handleInference(req: InferenceRequest): Promise<Response> {
  const { gw, request } = req;
  let scheduling: SchedulingOptions;
  let model: ModelConfig;
  let parsed: Parsed;
  let bytes: Uint8Array;
  let json: Record<string, unknown> | undefined;
  try {
    scheduling = admit(gw, request);
    ({ model, parsed, bytes, json } = await parse(gw, request, req.pathAndQuery, req.route));
  } catch (err) {
    return openaiError(asQmError(err));
  }
  // The hold after a tool-call answer needs to know how the answer ended; watch for it only
  // when it can matter: holds are on, and the request offered tools to call.
  const sched = gw.config.scheduler;
  const watch =
    parsed.offersTools && sched.holdOn === "tool_calls" && (scheduling.holdMs ?? sched.holdMs) > 0;
  return runExchange({
    gw,
    request,
    model,
    scheduling,
    api: OPENAI,
    log: req.log,
    placeholder: parsed.stream && STREAMING_PATHS.has(req.route),
    // An OpenAI answer says how it ended at its end: only that is scanned (observer.ts).
    observer: new Observer(watch ? OPENAI_TOOL_CALLS : null, { tail: true }),
    offersTools: parsed.offersTools,
    body: bytes,
    json,
    parsed,
    send,
  });
}
