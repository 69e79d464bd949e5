import { Elysia } from "elysia";
import type { ModelConfig } from "../../config/types.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { sseComment, sseEvent } from "../../shared/sse.ts";
import { noIdleTimeout } from "../edge/idle.ts";
import type { Call } from "../exchange/call.ts";
import { type Asks, type Exchange, headersOf, runExchange } from "../exchange/exchange.ts";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { LOAD } from "../openai/inference.ts";
import { readBody } from "../request/body.ts";

/** The control paths and the methods each answers (for a 405's `Allow`). */
const CONTROL_PATHS: [RegExp, string][] = [
  [/^\/(?:|health|running|api\/status|api\/events|api\/requests)$/, "GET"],
  [/^\/api\/models\/[^/]+\/logs$/, "GET"],
  [/^\/api\/models\/(?:unload|[^/]+\/(?:load|unload|lease))$/, "POST"],
  [/^\/api\/models\/[^/]+\/lease\/[^/]+$/, "POST, DELETE"],
];

/** The methods a control path answers, or null when it is no control path. */
export function controlMethods(path: string): string | null {
  for (const [pattern, methods] of CONTROL_PATHS) if (pattern.test(path)) return methods;
  return null;
}

/**
 * `/` (what Ollama answers there: clients probe it to find a server), `/health`, `/api/*` and
 * llama-swap's `/running`. Errors use the OpenAI envelope.
 */
export function controlRoutes(gw: Gateway, log: Logger) {
  return new Elysia()
    .get(
      "/",
      () =>
        new Response("quartermaster is running\n", {
          headers: { "content-type": "text/plain; charset=utf-8" },
        }),
    )
    .get("/health", () =>
      gw.shuttingDown
        ? Response.json({ status: "shutting down" }, { status: 503 })
        : Response.json({ status: "ok" }),
    )
    .get("/api/status", () => Response.json(gw.status()))
    .get("/running", () => ({
      running: gw
        .status()
        .models.filter((m) => m.state !== "stopped")
        .map((m) => ({ model: m.id, state: m.state })),
    }))
    .get("/api/models/:id/logs", ({ params }) => {
      const model = gw.resolve(params.id);
      if (!model) return unknownModel(params.id);
      const lines = gw.logs(model.id);
      return new Response(lines.length ? `${lines.join("\n")}\n` : "", {
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    })
    .post("/api/models/unload", ({ request }) => {
      try {
        gw.unload(null, { force: forced(request) });
        return { unloaded: "all" };
      } catch (err) {
        return openaiError(asQmError(err));
      }
    })
    .post("/api/models/:id/load", async ({ params, request }) => {
      let model: ModelConfig | undefined;
      try {
        model = await gw.resolveModel(params.id);
      } catch (err) {
        return openaiError(asQmError(err));
      }
      if (!model) return unknownModel(params.id);
      return runExchange({
        gw,
        request,
        model,
        asks: NO_ASKS,
        api: LOAD,
        log,
        parsed: null,
        send: loaded,
      });
    })
    .post("/api/models/:id/unload", ({ params, request }) => {
      const model = gw.resolve(params.id);
      if (!model) return unknownModel(params.id);
      try {
        gw.unload(model.id, { force: forced(request) });
      } catch (err) {
        return openaiError(asQmError(err));
      }
      return { model: model.id, state: gw.modelState(model.id) };
    })
    .post(
      "/api/models/:id/lease",
      async ({ params, request }) => {
        const model = gw.resolve(params.id);
        if (!model) return unknownModel(params.id);
        try {
          const ttlMs = await leaseTtl(request, DEFAULT_LEASE_TTL_MS);
          noIdleTimeout(request);
          return await gw.lease(model, request.signal, ttlMs!);
        } catch (err) {
          return openaiError(asQmError(err));
        }
      },
      { parse: "none" },
    )
    .post(
      "/api/models/:id/lease/:lease",
      async ({ params, request }) => {
        try {
          const model = gw.resolve(params.id)?.id ?? params.id;
          const ttlMs = await leaseTtl(request, undefined);
          return gw.renewLease(model, params.lease, ttlMs);
        } catch (err) {
          return openaiError(asQmError(err));
        }
      },
      { parse: "none" },
    )
    .delete("/api/models/:id/lease/:lease", ({ params }) => {
      try {
        const model = gw.resolve(params.id)?.id ?? params.id;
        gw.releaseLease(model, params.lease);
        return { released: params.lease, model };
      } catch (err) {
        return openaiError(asQmError(err));
      }
    })
    .get("/api/events", ({ request }) => {
      noIdleTimeout(request);
      return new Response(eventStream(gw, request.signal), {
        headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
      });
    });
}

const NO_ASKS: Asks = {};

/** A load is an exchange whose answer is that the model is ready: it ends at once. */
async function loaded(x: Exchange<null>, call: Call): Promise<Response> {
  call.finish(false);
  call.tag(headersOf(x));
  const { id } = x.model;
  return Response.json(
    { model: id, state: x.gw.modelState(id), wait_ms: call.waitedMs },
    { headers: headersOf(x) },
  );
}

/** `?force=true` (or `1`): unload even a leased model, revoking its leases. */
function forced(request: Request): boolean {
  const q = request.url.indexOf("?");
  if (q < 0) return false;
  const force = new URLSearchParams(request.url.slice(q + 1)).get("force");
  return force === "true" || force === "1";
}

/** A lease lives this long unless renewed: a holder that vanished must not pin a model forever. */
const DEFAULT_LEASE_TTL_MS = 10 * 60 * 1000;

/** A lease body is `{"ttl_s": N}`; nothing bigger than this is ever needed. */
const LEASE_BODY_LIMIT = 64 * 1024;

/** `{"ttl_s": N}` from an optional JSON body. */
async function leaseTtl(
  request: Request,
  fallback: number | undefined,
): Promise<number | undefined> {
  const text = new TextDecoder().decode(await readBody(request, LEASE_BODY_LIMIT));
  if (text.trim() === "") return fallback;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new QmError("bad_request", 'lease body must be JSON like {"ttl_s": 600}');
  }
  const ttl = (body as { ttl_s?: unknown } | null)?.ttl_s;
  if (ttl === undefined) return fallback;
  if (typeof ttl !== "number" || !(ttl > 0) || ttl > 7 * 24 * 3600) {
    throw new QmError("bad_request", "ttl_s must be a number of seconds between 0 and 604800", {
      param: "ttl_s",
    });
  }
  return ttl * 1000;
}

function unknownModel(name: string): Response {
  return openaiError(
    new QmError("model_not_found", `model "${name}" not found; GET /v1/models lists them`),
  );
}

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(sseComment("keep-alive"));

/** Server-sent events: a `status` snapshot first, then every change as it happens. */
function eventStream(gw: Gateway, signal: AbortSignal): ReadableStream<Uint8Array> {
  let unsubscribe = () => {};
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  const close = () => {
    unsubscribe();
    clearInterval(keepAlive);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: string, data: unknown) => {
        try {
          controller.enqueue(encoder.encode(sseEvent(JSON.stringify(data), event)));
        } catch {
          close();
        }
      };
      send("status", gw.status());
      unsubscribe = gw.subscribe((e) => send(e.type, e));
      keepAlive = setInterval(() => {
        try {
          controller.enqueue(KEEP_ALIVE);
        } catch {
          close();
        }
      }, 15_000);
      signal.addEventListener("abort", close, { once: true });
    },
    cancel: close,
  });
}
