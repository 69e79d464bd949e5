import { Elysia } from "elysia";
import type { ModelConfig } from "../../config/types.ts";
import type { ApiKey } from "../../keys/api-key.ts";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { sseComment, sseEvent } from "../../shared/sse.ts";
import { keyOf } from "../edge/caller.ts";
import { noIdleTimeout } from "../edge/idle.ts";
import { eventFor, statusFor, visible, visibleId } from "../edge/visible.ts";
import type { Call } from "../exchange/call.ts";
import { type Exchange, headersOf, runExchange } from "../exchange/exchange.ts";
import type { ControlGateway, InferenceGateway, QmEvent } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { LOAD } from "../openai/inference.ts";
import { readBody } from "../request/body.ts";
import { historyRoutes } from "./history.ts";
import { LLAMA_SWAP_PATHS, llamaSwapRoutes } from "./llama-swap.ts";

/** The control paths and the methods each answers (for a 405's `Allow`). */
const CONTROL_PATHS: [RegExp, string][] = [
  [
    /^\/(?:|health|ready|running|api\/status|api\/events|api\/requests|api\/usage|api\/history)$/,
    "GET",
  ],
  [/^\/api\/models\/[^/]+\/logs$/, "GET"],
  [/^\/api\/requests\/[^/]+$/, "GET"],
  [/^\/api\/models\/(?:unload|[^/]+\/(?:load|unload|lease))$/, "POST"],
  [/^\/api\/models\/[^/]+\/lease\/[^/]+$/, "POST, DELETE"],
  [/^\/api\/config\/reload$/, "POST"],
  ...LLAMA_SWAP_PATHS,
];

/** The methods a control path answers, or null when it is no control path. */
export function controlMethods(path: string): string | null {
  for (const [pattern, methods] of CONTROL_PATHS) if (pattern.test(path)) return methods;
  return null;
}

/**
 * `/` (what Ollama answers there: clients probe it to find a server), `/health`, `/ready`,
 * `/api/*` and llama-swap's `/running`. Errors use the OpenAI envelope. A load is an exchange
 * like any request for a model, so these routes also take what the exchange needs.
 */
export function controlRoutes(gw: ControlGateway & InferenceGateway, log: Logger) {
  return new Elysia()
    .use(llamaSwapRoutes(gw, log))
    .use(historyRoutes(gw))
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
    .get("/ready", () => {
      const reason = notReady(gw);
      return Response.json(reason === null ? { ready: true } : { ready: false, reason }, {
        status: reason === null ? 200 : 503,
        // A probe, or a load balancer's health check, must see the state now, never a copy.
        headers: { "cache-control": "no-store" },
      });
    })
    .get("/api/status", ({ request }) => Response.json(statusFor(gw, keyOf(request), gw.status())))
    .get("/running", ({ request }) => {
      const key = keyOf(request);
      return {
        running: gw
          .status()
          .models.filter((m) => m.state !== "stopped" && visibleId(gw, key, m.id))
          .map((m) => ({ model: m.id, state: m.state })),
      };
    })
    .get("/api/models/:id/logs", ({ params, request }) => {
      const model = gw.resolve(params.id);
      if (!model) return unknownModel(params.id);
      if (follows(request)) {
        // `?follow=1`: the kept lines, then each new one as it comes, as SSE `log` events.
        noIdleTimeout(request);
        const id = model.id;
        return sseResponse(
          feed(request.signal, (send) => {
            for (const line of gw.logs(id)) send("log", line);
            return gw.followLogs(id, (line) => send("log", line));
          }),
        );
      }
      const lines = gw.logs(model.id);
      return new Response(lines.length ? `${lines.join("\n")}\n` : "", {
        headers: { "content-type": "text/plain; charset=utf-8" },
      });
    })
    .post(
      "/api/config/reload",
      () => {
        if (!gw.reloadConfig) {
          return openaiError(new QmError("not_found", "this server cannot reload its config"));
        }
        const outcome = gw.reloadConfig();
        // A config that does not load is the caller's to fix: 400 with the loader's own text.
        return outcome.ok
          ? Response.json(outcome)
          : openaiError(new QmError("bad_request", outcome.error));
      },
      { parse: "none" },
    )
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
        scheduling: { key: keyOf(request) },
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
        const key = keyOf(request);
        const model = gw.resolve(params.id);
        if (!model || !visible(gw, key, model)) return unknownModel(params.id);
        try {
          const ttlMs = await leaseTtl(request, DEFAULT_LEASE_TTL_MS);
          noIdleTimeout(request);
          return await gw.lease(model, request.signal, ttlMs!, key);
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
          const key = keyOf(request);
          const model = leaseModel(gw, key, params.id, params.lease);
          const ttlMs = await leaseTtl(request, undefined);
          return gw.renewLease(model, params.lease, ttlMs, key);
        } catch (err) {
          return openaiError(asQmError(err));
        }
      },
      { parse: "none" },
    )
    .delete("/api/models/:id/lease/:lease", ({ params, request }) => {
      try {
        const key = keyOf(request);
        const model = leaseModel(gw, key, params.id, params.lease);
        gw.releaseLease(model, params.lease, key);
        return { released: params.lease, model };
      } catch (err) {
        return openaiError(asQmError(err));
      }
    })
    .get("/api/events", ({ request }) => {
      noIdleTimeout(request);
      // A client back after a lost connection gets what it missed, if it is still kept;
      // otherwise (and on a first connection) the whole status, then each change.
      const missed = resumeFrom(request, gw);
      // A key that is no admin gets its own requests and its models' public state only.
      const key = keyOf(request);
      const pass = (e: QmEvent, id: number, send: (t: string, d: string, i?: number) => void) => {
        const seen = eventFor(gw, key, e);
        if (seen) send(seen.type, JSON.stringify(seen), id);
      };
      return sseResponse(
        feed(request.signal, (send) => {
          if (missed === null) {
            send("status", JSON.stringify(statusFor(gw, key, gw.status())), gw.lastEventId);
          } else for (const { id, event } of missed) pass(event, id, send);
          return gw.subscribe((e, id) => pass(e, id, send));
        }),
      );
    });
}

/**
 * Why qm cannot take traffic now, or null when it can. The other conditions hold before any
 * request is answered: `startServer` binds every listener synchronously, after the config
 * loaded, and a bind that fails ends the process — so a request answered here was answered by
 * a qm whose listeners are all up. What remains is shutdown.
 */
function notReady(gw: ControlGateway): string | null {
  if (gw.shuttingDown) return "qm is shutting down";
  return null;
}

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

/**
 * The model id a lease route names. One the key may not use has no lease it could know of: it
 * is answered as a lease the model does not have (as the lease book says it).
 */
function leaseModel(gw: ControlGateway, key: ApiKey, name: string, lease: string): string {
  const model = gw.resolve(name);
  if (model && !visible(gw, key, model)) {
    throw new QmError("not_found", `no lease "${lease}" on model "${name}" (released or expired)`);
  }
  return model?.id ?? name;
}

function unknownModel(name: string): Response {
  return openaiError(
    new QmError("model_not_found", `model "${name}" not found; GET /v1/models lists them`),
  );
}

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(sseComment("keep-alive"));

/** Server-sent events: a `status` snapshot first, then every change as it happens. */
function sseResponse(body: ReadableStream<Uint8Array>): Response {
  return new Response(body, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // Proxies in front (nginx) must pass each event on as it comes.
      "x-accel-buffering": "no",
    },
  });
}

/** The events a `Last-Event-ID` (header, or `?last_event_id=`) missed; null: start afresh. */
function resumeFrom(
  request: Request,
  gw: ControlGateway,
): ReturnType<ControlGateway["eventsSince"]> {
  const q = request.url.indexOf("?");
  const raw =
    request.headers.get("last-event-id") ??
    (q < 0 ? null : new URLSearchParams(request.url.slice(q + 1)).get("last_event_id"));
  if (raw === null || !/^\d{1,15}$/.test(raw.trim())) return null;
  return gw.eventsSince(Number(raw.trim()));
}

/** `?follow=1` (or `true`). */
function follows(request: Request): boolean {
  const q = request.url.indexOf("?");
  if (q < 0) return false;
  const follow = new URLSearchParams(request.url.slice(q + 1)).get("follow");
  return follow === "1" || follow === "true";
}

/**
 * An endless SSE feed: `open` sends what there is and subscribes (returning the unsubscribe);
 * a comment every 15 s keeps proxies and idle clients on. Ends when the client leaves. Each
 * data is one line (an output line, or JSON).
 */
function feed(
  signal: AbortSignal,
  open: (send: (event: string, data: string, id?: number) => void) => () => void,
): ReadableStream<Uint8Array> {
  let unsubscribe = () => {};
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let closed = false;
  const close = () => {
    closed = true;
    unsubscribe();
    clearInterval(keepAlive);
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const enqueue = (bytes: Uint8Array) => {
        try {
          controller.enqueue(bytes);
        } catch {
          close();
        }
      };
      const send = (event: string, data: string, id?: number) =>
        enqueue(encoder.encode(sseEvent(data, event, id)));
      const off = open(send);
      if (closed) off();
      else unsubscribe = off;
      keepAlive = setInterval(() => enqueue(KEEP_ALIVE), 15_000);
      signal.addEventListener("abort", close, { once: true });
    },
    cancel: close,
  });
}
