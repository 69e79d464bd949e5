import { Elysia } from "elysia";
import type { ModelConfig } from "../../config/types.ts";
import { forward } from "../../proxy/forward.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import type { Call } from "../exchange/call.ts";
import { admit, type Exchange, runExchange, type SchedulingOptions } from "../exchange/exchange.ts";
import type { Gateway } from "../gateway.ts";
import { readBody } from "../request/body.ts";
import { openaiError } from "./errors.ts";
import { handleInference, UPSTREAM } from "./inference.ts";
import { listModels, type ModelsShape, retrieveModel } from "./models.ts";

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

/**
 * Paths some clients use without the `/v1` prefix (a base URL configured without it): each is
 * the same route as its `/v1` path, and goes upstream as that path.
 */
export const UNPREFIXED: Readonly<Record<string, (typeof INFERENCE_PATHS)[number]>> = {
  "/chat/completions": "/v1/chat/completions",
  "/completions": "/v1/completions",
  "/embeddings": "/v1/embeddings",
};

/** Every inference route's path and the `/v1` path it serves. */
export const INFERENCE_ROUTES: readonly (readonly [string, (typeof INFERENCE_PATHS)[number]])[] = [
  ...INFERENCE_PATHS.map((p) => [p, p] as const),
  ...Object.entries(UNPREFIXED),
];

function methodNotAllowed(method: string, path: string, allowed: string): Response {
  return openaiError(
    new QmError("method_not_allowed", `${method} is not allowed on ${path}; use ${allowed}`),
    { allow: allowed },
  );
}

/**
 * The handler of one inference route (the edge calls these directly: they are the hot path).
 * `path` is the route's own path, `v1` the OpenAI path it serves and sends upstream.
 */
export function inferenceRoute(gw: Gateway, path: string, log: Logger, v1: string = path) {
  return (request: Request): Promise<Response> | Response => {
    if (request.method !== "POST") return methodNotAllowed(request.method, path, "POST");
    const url = request.url;
    const q = url.indexOf("?");
    return handleInference({
      gw,
      request,
      pathAndQuery: q >= 0 ? v1 + url.slice(q) : v1,
      route: v1,
      log,
    });
  };
}

/** `models`: another API's shape of `/v1/models`, for the requests that ask for it. */
export function openaiRoutes(gw: Gateway, log: Logger, models: ModelsShape | null = null) {
  const app = new Elysia();
  for (const [path, v1] of INFERENCE_ROUTES) {
    const handle = inferenceRoute(gw, path, log, v1);
    app.all(path, ({ request }) => handle(request), { parse: "none" });
  }

  for (const prefix of ["/v1", ""]) {
    app.all(`${prefix}/models`, ({ request }) => {
      if (request.method !== "GET") {
        return methodNotAllowed(request.method, `${prefix}/models`, "GET");
      }
      return listModels(gw, request, Date.now(), models);
    });
    app.all(`${prefix}/models/*`, ({ request }) => {
      if (request.method !== "GET") {
        return methodNotAllowed(request.method, new URL(request.url).pathname, "GET");
      }
      return retrieveModel(gw, request, Date.now(), models);
    });
  }

  app.all("/upstream/*", ({ request }) => upstream(gw, request, log), {
    parse: "none",
  });
  return app;
}

interface Raw {
  pathAndQuery: string;
  body: Uint8Array | null;
}

/**
 * `/upstream/{model}/{path}`: the raw upstream API of a model (its own web UI, `/props`, …),
 * loading it first. Model ids may contain `/`, so the longest matching prefix wins.
 */
async function upstream(gw: Gateway, request: Request, log: Logger): Promise<Response> {
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
  const bodiless = request.method === "GET" || request.method === "HEAD";
  let scheduling: SchedulingOptions;
  let body: Uint8Array | null = null;
  try {
    scheduling = admit(gw, request);
    if (!bodiless) body = await readBody(request, gw.config.server.maxBodyBytes);
  } catch (err) {
    return openaiError(asQmError(err), { "x-qm-model": model.id });
  }
  return runExchange<Raw>({
    gw,
    request,
    model,
    scheduling,
    api: UPSTREAM,
    log,
    // A GET through /upstream (a model's web UI, an event stream) may idle for long.
    mayIdle: bodiless,
    body,
    parsed: { pathAndQuery: `/${parts.slice(used).join("/")}${url.search}`, body },
    send: sendRaw,
  });
}

function sendRaw(x: Exchange<Raw>, call: Call): Promise<Response> {
  return forward({
    base: call.base,
    pathAndQuery: x.parsed.pathAndQuery,
    method: x.request.method,
    headers: x.request.headers,
    body: x.parsed.body,
    call,
  });
}
