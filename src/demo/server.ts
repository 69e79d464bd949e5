/**
 * The demo upstream's HTTP server: `Bun.serve` with a hand-written dispatch (no framework
 * on the benchmark's hot path). Process-level behaviour (signals, crashes, exit timers)
 * lives in `upstream.ts`; this file only answers requests, so tests can run it in-process.
 */
import type { Server } from "bun";
import { buildTokens } from "./completion.ts";
import { DEFAULT_WAKE_MS, type DemoOptions } from "./flags.ts";
import { json, jsonText, openAiError, pathOf, untilAborted } from "./http.ts";
import { chatCompletions, completions, type DemoContext, embeddings } from "./inference.ts";
import { applyTemplate, props, tokenize } from "./llama-extras.ts";
import { DemoMetrics, METRICS_CONTENT_TYPE } from "./metrics.ts";
import { DemoSlots } from "./slots.ts";

export interface DemoServerHooks {
  /** A simulated crash (`--crash-after-tokens`): must end the process with exit code 1. */
  crash(message: string): void;
  /** The clock the load delay is measured on (tests pass a fake one); `performance.now`. */
  now?: () => number;
}

export interface DemoServer {
  readonly server: Server<undefined>;
  readonly port: number;
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  /** Clock time (`hooks.now`, default `performance.now()`) from which /health answers 200. */
  readonly readyAt: number;
  stop(): Promise<void>;
}

const HEALTH_OK = JSON.stringify({ status: "ok" });
// llama-server answers 503 while it loads weights; qm's readiness poll waits for a 200.
const HEALTH_LOADING = JSON.stringify({ status: "loading model" });

export function startDemoServer(options: DemoOptions, hooks: DemoServerHooks): DemoServer {
  const now = hooks.now ?? (() => performance.now());
  const readyAt = now() + options.loadDelayMs;
  let counter = 0;
  const slots = options.slots ? new DemoSlots(options) : null;
  const ctx: DemoContext = {
    slots,
    options,
    table: buildTokens(options.name, options.tokens, options.markdown === true),
    crash: hooks.crash,
    nextId: () => ++counter,
  };
  const modelsBody = JSON.stringify({
    object: "list",
    data: [
      {
        id: options.name,
        object: "model",
        created: Math.floor(Date.now() / 1000),
        owned_by: "quartermaster-demo",
      },
    ],
  });
  const failMessage = `demo upstream ${options.name} answers every request with HTTP ${options.failStatus} (--fail-status)`;
  const loaded = () => options.loadDelayMs === 0 || now() >= readyAt;
  const metrics = options.metrics ? new DemoMetrics() : null;
  /** vLLM's sleep API (`--sleep-mode`): asleep since `POST /sleep`, until a wake. */
  let asleep = false;

  async function sleepApi(req: Request, path: string, query: string): Promise<Response> {
    const method = req.method;
    if (path === "/is_sleeping") {
      return method === "GET" ? json({ is_sleeping: asleep }) : notAllowed(method, path);
    }
    if (method !== "POST") return notAllowed(method, path);
    if (path === "/sleep") {
      const level = new URLSearchParams(query).get("level") ?? "1";
      if (level !== "1" && level !== "2") {
        return openAiError(400, `level must be 1 or 2, got ${JSON.stringify(level)}`);
      }
      asleep = true;
      if (options.logRequests) process.stdout.write(`sleeping (level ${level})\n`);
      return new Response(null, { status: 200 });
    }
    if (options.failWake) return openAiError(500, "wake_up failed (--fail-wake)");
    // Real time, as in all of the demo: it is a separate fake model process, and its delays
    // are the model's own, which qm (on its injected timers) must see take real time.
    await new Promise((resolve) => setTimeout(resolve, options.wakeMs ?? DEFAULT_WAKE_MS));
    asleep = false;
    if (options.logRequests) process.stdout.write("awake\n");
    return new Response(null, { status: 200 });
  }

  async function fetch(req: Request, srv: Server<undefined>): Promise<Response> {
    const { path, query } = pathOf(req.url);
    const method = req.method;
    if (path === "/health") {
      if (method !== "GET" && method !== "HEAD") return notAllowed(method, path);
      // A promise that never settles: the prober's own timeout is what ends the wait.
      if (options.hangHealth) return new Promise<Response>(() => {});
      return loaded() ? jsonText(HEALTH_OK) : jsonText(HEALTH_LOADING, 503);
    }
    if (path === "/debug/echo" || path.startsWith("/debug/echo/")) return echo(req, path, query);
    if (options.sleepMode && SLEEP_ROUTES.has(path)) return sleepApi(req, path, query);
    if (path === "/v1/models") {
      return method === "GET" ? jsonText(modelsBody) : notAllowed(method, path);
    }
    if (path === "/props") return method === "GET" ? props(options) : notAllowed(method, path);
    if (slots && (path === "/slots" || path.startsWith("/slots/"))) {
      if (path === "/slots") return method === "GET" ? slots.list() : notAllowed(method, path);
      if (method !== "POST") return notAllowed(method, path);
      const action = new URLSearchParams(query).get("action") ?? "";
      return slots.action(req, path.slice("/slots/".length), action);
    }
    if (path === "/metrics") {
      if (method !== "GET") return notAllowed(method, path);
      if (!metrics) return openAiError(501, "metrics are off: start the demo with --metrics");
      return new Response(metrics.text(), { headers: { "content-type": METRICS_CONTENT_TYPE } });
    }
    const helper = HELPERS[path];
    if (helper !== undefined) return method === "POST" ? helper(req) : notAllowed(method, path);
    const handler = INFERENCE[path];
    if (handler === undefined) return openAiError(404, `no route ${method} ${path}`);
    if (method !== "POST") return notAllowed(method, path);
    if (options.logRequests) process.stdout.write(`${method} ${path}\n`);
    if (options.failStatus !== null) return openAiError(options.failStatus, failMessage);
    if (!loaded()) return openAiError(503, "Loading model", "unavailable_error");
    if (asleep)
      return openAiError(503, "the model is sleeping: POST /wake_up first", "unavailable_error");
    // A slow generation must not be cut by Bun's per-connection idle timer.
    srv.timeout(req, 0);
    // A wedged server: the request is taken, nothing ever comes back.
    if (options.hangBeforeHeaders) return untilAborted(req).then(() => new Response(null));
    if (!metrics) return handler(ctx, req);
    const answered = metrics.begin(now);
    return handler(ctx, req).finally(answered);
  }

  const server = Bun.serve({
    hostname: options.host,
    port: options.port,
    // Streams paced by --token-ms and hung health probes may sit idle for long.
    idleTimeout: 0,
    fetch,
    error: (err) => openAiError(500, `demo upstream error: ${err.message}`),
  });
  const port = server.port as number;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    server,
    port,
    url: `http://${host}:${port}`,
    readyAt,
    stop: () => server.stop(true),
  };
}

const SLEEP_ROUTES = new Set(["/sleep", "/wake_up", "/is_sleeping"]);

const INFERENCE: Record<string, (ctx: DemoContext, req: Request) => Promise<Response>> = {
  "/v1/chat/completions": chatCompletions,
  "/v1/completions": completions,
  "/v1/embeddings": embeddings,
};

/** llama-server's template and tokenizer routes (no model needed, answered while loading too). */
const HELPERS: Record<string, (req: Request) => Promise<Response>> = {
  "/apply-template": applyTemplate,
  "/tokenize": tokenize,
};

function notAllowed(method: string, path: string): Response {
  return openAiError(405, `method ${method} not allowed on ${path}`);
}

/** Shows exactly what arrived, so proxy tests can check header hygiene and body passthrough. */
async function echo(req: Request, path: string, query: string): Promise<Response> {
  const bytes = new Uint8Array(await req.arrayBuffer());
  return json({
    method: req.method,
    path,
    query,
    headers: Object.fromEntries(req.headers),
    body: new TextDecoder().decode(bytes),
    bodyLength: bytes.byteLength,
  });
}
