import type { ModelConfig } from "../../config/types.ts";
import { forward } from "../../proxy/forward.ts";
import { ToolCallWatcher } from "../../proxy/tool-calls.ts";
import { placeholderStream } from "../../proxy/wait-status.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import { linkToClient } from "../client-link.ts";
import type { AcquireHooks, Gateway, Lease } from "../gateway.ts";
import { badRequest, parseJsonObject, readBody } from "../request/body.ts";
import { schedulingHeaders } from "../request/scheduling.ts";
import { callGuards } from "../upstream-call.ts";
import { openaiError } from "./errors.ts";

export interface InferenceRequest {
  gw: Gateway;
  request: Request;
  /** Path and query sent upstream (same as the client's for OpenAI routes). */
  pathAndQuery: string;
  /** The route's path (without the query): only text-generation routes answer in SSE. */
  route: string;
  /** Disables Bun's idle timeout for this request: a model load can take minutes. */
  noIdleTimeout: () => void;
}

const encoder = new TextEncoder();

/**
 * Routes whose `stream: true` answer is SSE, so a wait-status placeholder can stand in front
 * of it. Elsewhere (embeddings, rerank, images) `stream` means nothing to the upstream, whose
 * JSON answer must not arrive wrapped in an event stream.
 */
const STREAMING_PATHS = new Set(["/v1/chat/completions", "/v1/completions"]);

interface Parsed {
  model: ModelConfig;
  stream: boolean;
  body: Uint8Array;
  /** The request offers tools: only then can the answer end in tool calls. */
  offersTools: boolean;
  /** Set when the body was re-encoded with a new multipart boundary. */
  contentType?: string;
}

/** Reads the body once, finds the model, rewrites `model` only when configured to. */
async function parse(gw: Gateway, request: Request): Promise<Parsed> {
  const bytes = await readBody(request, gw.config.server.maxBodyBytes);
  const type = request.headers.get("content-type") ?? "";
  if (type.startsWith("multipart/form-data")) return parseMultipart(gw, bytes, type);
  const obj = parseJsonObject(bytes);
  const model = await resolveModel(gw, obj.model);
  let body = bytes;
  if (model.useModelName) {
    obj.model = model.useModelName;
    body = encoder.encode(JSON.stringify(obj));
  }
  const offersTools = nonEmpty(obj.tools) || nonEmpty(obj.functions);
  return { model, stream: obj.stream === true, body, offersTools };
}

function nonEmpty(v: unknown): boolean {
  return Array.isArray(v) && v.length > 0;
}

async function parseMultipart(gw: Gateway, bytes: Uint8Array, type: string): Promise<Parsed> {
  const form = await new Response(bytes, { headers: { "content-type": type } })
    .formData()
    .catch(() => null);
  if (!form) throw badRequest("request body is not valid multipart/form-data");
  const model = await resolveModel(gw, form.get("model"));
  if (!model.useModelName) {
    return { model, stream: form.get("stream") === "true", body: bytes, offersTools: false };
  }
  form.set("model", model.useModelName);
  // Re-encode: the boundary changes, so the content-type sent upstream must follow.
  const rebuilt = new Response(form as never);
  return {
    model,
    stream: false,
    offersTools: false,
    body: new Uint8Array(await rebuilt.arrayBuffer()),
    contentType: rebuilt.headers.get("content-type") ?? type,
  };
}

async function resolveModel(gw: Gateway, name: unknown): Promise<ModelConfig> {
  if (name === undefined || name === null || name === "") {
    throw badRequest('the request has no "model" field', "model");
  }
  if (typeof name !== "string") throw badRequest('"model" must be a string', "model");
  // Plain names resolve synchronously; only `model?ctx=N` variants may need minting.
  const model = gw.resolve(name) ?? (await gw.resolveModel(name));
  if (!model) {
    throw new QmError(
      "model_not_found",
      `model "${name}" not found; GET /v1/models lists the models this server has`,
      { param: "model" },
    );
  }
  return model;
}

/** Chat and text completion streams end with `data: [DONE]`; one without it was cut short. */
function endsWithDone(pathAndQuery: string): boolean {
  return /^\/v1\/(?:chat\/)?completions(?:\?|$)/.test(pathAndQuery);
}

/** Handles one OpenAI inference request end to end; always returns a Response. */
export async function handleInference(req: InferenceRequest): Promise<Response> {
  const { gw, request } = req;
  let parsed: Parsed;
  let asks: Pick<AcquireHooks, "holdMs" | "patienceMs">;
  try {
    if (gw.shuttingDown) throw new QmError("shutting_down", "qm is shutting down");
    asks = schedulingHeaders(request.headers);
    parsed = await parse(gw, request);
  } catch (err) {
    return openaiError(asQmError(err));
  }
  req.noIdleTimeout();
  const { model } = parsed;
  const loaded = gw.modelState(model.id) === "ready";
  const tags: [string, string][] = [
    ["x-qm-model", model.id],
    ["x-qm-model-loaded", String(loaded)],
  ];
  let upstreamHeaders = request.headers;
  if (parsed.contentType) {
    upstreamHeaders = new Headers(request.headers);
    upstreamHeaders.set("content-type", parsed.contentType);
  }
  // The hold after a tool-call answer needs to know how the answer ended; watch for it only
  // when it can matter: holds are on, and the request offered tools to call.
  const sched = gw.config.scheduler;
  const watcher =
    parsed.offersTools && sched.holdOn === "tool_calls" && (asks.holdMs ?? sched.holdMs) > 0
      ? new ToolCallWatcher()
      : null;
  const send = (
    lease: Lease,
    signal: AbortSignal,
    extraHeaders: [string, string][],
    done = () => {},
  ) => {
    const guards = callGuards(gw, model);
    return forward({
      // The lease's config: the model may have been moved to another port to start.
      base: lease.model.proxy,
      pathAndQuery: req.pathAndQuery,
      method: request.method,
      headers: upstreamHeaders,
      body: parsed.body,
      signal,
      // Field by field, not spread: this is every request's path.
      model: guards.model,
      deadline: guards.deadline,
      stderrTail: guards.stderrTail,
      log: guards.log,
      checkSse: { requireDone: endsWithDone(req.pathAndQuery) },
      extraHeaders,
      onChunk: watcher ? (c: Uint8Array) => watcher.feed(c) : undefined,
      onEnd: () => {
        done();
        lease.release({ toolCalls: watcher?.sawToolCalls ?? false });
      },
    });
  };

  if (parsed.stream && !loaded && model.sendLoadingState && STREAMING_PATHS.has(req.route)) {
    // The placeholder stream can be cancelled before the client's connection closes, so the
    // wait and the upstream call follow a signal of their own.
    const client = linkToClient(request);
    const body = placeholderStream({
      model: model.id,
      start: async (progress) => {
        try {
          const lease = await gw.acquire(model, client.signal, { ...progress, ...asks });
          return await send(lease, client.signal, [], client.detach);
        } catch (err) {
          client.detach();
          throw err;
        }
      },
      onCancel: client.abort,
    });
    const headers = new Headers(tags);
    headers.set("content-type", "text/event-stream");
    headers.set("cache-control", "no-cache");
    return new Response(body, { status: 200, headers });
  }

  // The request's own signal aborts when the client disconnects: it cancels the wait and the
  // upstream call alike.
  try {
    const lease = await gw.acquire(model, request.signal, asks);
    tags.push(["x-qm-wait-ms", String(lease.waitedMs)]);
    return await send(lease, request.signal, tags);
  } catch (err) {
    return openaiError(asQmError(err), new Headers(tags));
  }
}
