import { Elysia } from "elysia";
import type { ModelConfig } from "../../config/types.ts";
import { forward } from "../../proxy/forward.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import { noIdleTimeout } from "../edge/idle.ts";
import type { Gateway } from "../gateway.ts";
import { readBody } from "../request/body.ts";
import { callGuards } from "../upstream-call.ts";
import { openaiError } from "./errors.ts";
import { handleInference } from "./inference.ts";

/** OpenAI inference routes: the body's `model` (a multipart field for audio) picks the model. */
export const INFERENCE_PATHS = [
  "/v1/chat/completions",
  "/v1/completions",
  "/v1/embeddings",
  "/v1/rerank",
  "/v1/reranking",
  "/v1/audio/speech",
  "/v1/audio/transcriptions",
  "/v1/images/generations",
] as const;

function methodNotAllowed(method: string, path: string, allowed: string): Response {
  return openaiError(
    new QmError("method_not_allowed", `${method} is not allowed on ${path}; use ${allowed}`),
    { allow: allowed },
  );
}

/** The handler of one inference route (the edge calls these directly: they are the hot path). */
export function inferenceRoute(gw: Gateway, path: string) {
  return (request: Request): Promise<Response> | Response => {
    if (request.method !== "POST") return methodNotAllowed(request.method, path, "POST");
    const url = request.url;
    const q = url.indexOf("?");
    return handleInference({
      gw,
      request,
      pathAndQuery: q >= 0 ? path + url.slice(q) : path,
      route: path,
      noIdleTimeout: () => noIdleTimeout(request),
    });
  };
}

export function openaiRoutes(gw: Gateway) {
  const app = new Elysia();
  for (const path of INFERENCE_PATHS) {
    const handle = inferenceRoute(gw, path);
    app.all(path, ({ request }) => handle(request), { parse: "none" });
  }

  app.all("/v1/models", ({ request }) => {
    if (request.method !== "GET") return methodNotAllowed(request.method, "/v1/models", "GET");
    return Response.json(listModels(gw));
  });

  app.all("/upstream/*", ({ request }) => upstream(gw, request), {
    parse: "none",
  });
  return app;
}

function listModels(gw: Gateway) {
  const created = Math.floor(Date.now() / 1000);
  const data = Object.values(gw.config.models)
    .filter((m) => !m.unlisted)
    .map((m) => ({
      id: m.id,
      object: "model",
      created,
      owned_by: "quartermaster",
      aliases: m.aliases,
      status: { value: gw.modelState(m.id) },
    }));
  return { object: "list", data };
}

/**
 * `/upstream/{model}/{path}`: the raw upstream API of a model (its own web UI, `/props`, …),
 * loading it first. Model ids may contain `/`, so the longest matching prefix wins.
 */
async function upstream(gw: Gateway, request: Request): Promise<Response> {
  const url = new URL(request.url);
  const rest = url.pathname.slice("/upstream/".length);
  const parts = rest.split("/");
  let model: ModelConfig | undefined;
  let used = 0;
  for (let n = parts.length; n > 0 && !model; n--) {
    model = gw.resolve(decodeURIComponent(parts.slice(0, n).join("/")));
    if (model) used = n;
  }
  if (!model) {
    return openaiError(
      new QmError(
        "model_not_found",
        `no model matches /upstream/${rest}; GET /v1/models lists them`,
      ),
    );
  }
  const path = `/${parts.slice(used).join("/")}${url.search}`;
  try {
    const body = ["GET", "HEAD"].includes(request.method)
      ? null
      : await readBody(request, gw.config.server.maxBodyBytes);
    noIdleTimeout(request);
    const aborter = new AbortController();
    const onGone = () => aborter.abort();
    request.signal.addEventListener("abort", onGone, { once: true });
    const lease = await gw.acquire(model, aborter.signal);
    const m = model;
    const res = await forward({
      base: lease.model.proxy, // the config it started with (its port may have moved)
      pathAndQuery: path,
      method: request.method,
      headers: request.headers,
      body,
      signal: aborter.signal,
      // A GET through /upstream (a model's web UI, an event stream) may idle for long.
      ...callGuards(gw, m, { mayIdle: request.method === "GET" || request.method === "HEAD" }),
      onEnd: () => {
        request.signal.removeEventListener("abort", onGone);
        lease.release();
      },
    });
    res.headers.set("x-qm-model", m.id);
    return res;
  } catch (err) {
    return openaiError(asQmError(err), { "x-qm-model": model.id });
  }
}
