/**
 * Test support for the Anthropic routes: a fake Gateway (no scheduler, no processes), a
 * scripted fake OpenAI upstream on port 0, and readers for Anthropic SSE.
 */

import { Elysia } from "elysia";
import { createParser } from "eventsource-parser";
import { anthropicRoutes } from "../../src/api/anthropic/routes.ts";
import { buildApp } from "../../src/api/app.ts";
import type { AcquireHooks, Gateway, Lease, StatusJson } from "../../src/api/gateway.ts";
import type { Config, ModelConfig } from "../../src/config/types.ts";
import type { Deadline } from "../../src/proxy/deadline.ts";
import type { ModelState, ServeOutcome } from "../../src/scheduler/types.ts";
import { createLogger, type LogLevel } from "../../src/shared/log.ts";
import { Sweep } from "../../src/shared/sweep.ts";
import type { Timers } from "../../src/shared/timer.ts";
import { config } from "../support/harness.ts";

export interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  signal: AbortSignal;
}

/** A fake OpenAI server; each test sets `handle`. Every request is recorded. */
export class FakeUpstream {
  readonly requests: Recorded[] = [];
  handle: (req: Recorded) => Response | Promise<Response> = () =>
    new Response("no handler", {
      status: 500,
    });
  private server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (req, srv) => {
      srv.timeout(req, 0);
      const text = await req.text();
      let body: Record<string, unknown> = {};
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = { raw: text };
      }
      const rec: Recorded = {
        path: new URL(req.url).pathname + new URL(req.url).search,
        headers: Object.fromEntries(req.headers),
        body,
        signal: req.signal,
      };
      this.requests.push(rec);
      return this.handle(rec);
    },
  });
  readonly url = `http://127.0.0.1:${this.server.port}`;
  last(path = "/v1/chat/completions"): Recorded {
    const r = this.requests.filter((q) => q.path.startsWith(path)).at(-1);
    if (!r) throw new Error(`no upstream request to ${path}`);
    return r;
  }
  stop() {
    return this.server.stop(true);
  }
}

/** `data: …` frames of a scripted OpenAI stream, `[DONE]` last unless `done` is false. */
export function sseText(chunks: (object | string)[], done = true): string {
  const frames = chunks.map((c) => `data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`);
  return frames.join("") + (done ? "data: [DONE]\n\n" : "");
}

export function sseResponse(text: string | ReadableStream<Uint8Array>, status = 200): Response {
  return new Response(text, { status, headers: { "content-type": "text/event-stream" } });
}

/** A chat.completion.chunk with one choice. */
export function chunk(delta: object, finish: string | null = null, extra: object = {}): object {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

export interface FakeGw extends Gateway {
  shuttingDown: boolean;
  releases: (ServeOutcome | undefined)[];
  states: Record<string, ModelState>;
  acquired: number;
  /** When set, acquire waits for it (reporting loading first). */
  gate: Promise<void> | null;
  /** Called once acquire has reported loading and starts waiting for `gate`. */
  onWaiting: () => void;
  /** Model ids as `reportStall` / `reportAnswered` heard of them, in order. */
  reports: string[];
}

/**
 * A Gateway over an inline TOML config; leases are recorded, never scheduled. With `timers`,
 * upstream calls' deadlines are swept on that clock, every 1 ms of it.
 */
export function fakeGateway(toml: string, timers?: Timers): FakeGw {
  const cfg: Config = config(toml);
  const gw: FakeGw = {
    config: cfg,
    ...(timers ? { calls: new Sweep<Deadline>(timers, 1) } : {}),
    shuttingDown: false,
    releases: [],
    states: {},
    acquired: 0,
    gate: null,
    onWaiting: () => {},
    reports: [],
    resolve(name: string): ModelConfig | undefined {
      const id = cfg.aliases[name] ?? name;
      return cfg.models[id];
    },
    resolveModel: async (name: string) => gw.resolve(name),
    logs: () => [],
    async acquire(model: ModelConfig, signal: AbortSignal, hooks?: AcquireHooks): Promise<Lease> {
      if (gw.gate) {
        hooks?.onLoading?.();
        gw.onWaiting();
        await gw.gate;
      }
      if (signal.aborted) throw new Error("aborted");
      gw.acquired++;
      gw.states[model.id] = "ready";
      return { model, waitedMs: 0, release: (o?: ServeOutcome) => void gw.releases.push(o) };
    },
    modelState: (id: string) => gw.states[id] ?? "stopped",
    stderrTail: () => [],
    status: () => ({}) as StatusJson,
    unload: () => {},
    lease: () => Promise.reject(new Error("not used by the Anthropic routes")),
    renewLease: () => {
      throw new Error("not used by the Anthropic routes");
    },
    releaseLease: () => {},
    subscribe: () => () => {},
    reportStall: (id: string) => void gw.reports.push(`stall ${id}`),
    reportAnswered: (id: string) => void gw.reports.push(`answered ${id}`),
  };
  return gw;
}

/** Config text for models served by `upstream` (cmd decides the profile). */
export function modelToml(id: string, upstream: FakeUpstream, extra = "", cmd = "run-model") {
  return `[models.${id}]\ncmd = "${cmd}"\nproxy = "${upstream.url}"\ncheck_endpoint = "none"\n${extra}\n`;
}

export const quietLog = (level: LogLevel = "error") => createLogger(level, () => {});

/** The full app (auth, 404s) or just the Anthropic routes with a short ping period. */
export function appFor(gw: Gateway, pingMs?: number) {
  if (pingMs === undefined) return buildApp(gw, { loopback: true, log: quietLog() });
  return new Elysia().use(anthropicRoutes(gw, { pingMs, log: quietLog() }));
}

export async function post(
  app: { handle(r: Request): Promise<Response> | Response },
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal,
    }),
  );
}

export interface AEvent {
  event: string | undefined;
  data: Record<string, unknown>;
}

/** Parses Anthropic SSE text into events; comments are dropped, as every SSE parser does. */
export function parseEvents(text: string): AEvent[] {
  const out: AEvent[] = [];
  const parser = createParser({
    onEvent: (e) => out.push({ event: e.event, data: JSON.parse(e.data) }),
  });
  parser.feed(text);
  return out;
}

export async function readEvents(res: Response): Promise<AEvent[]> {
  return parseEvents(await res.text());
}

/** Event types in order, checking each `event:` line names its payload's type. */
export function types(events: AEvent[]): string[] {
  for (const e of events) {
    if (e.event !== e.data.type) throw new Error(`event ${e.event} carries ${e.data.type}`);
  }
  return events.map((e) => e.event as string);
}

/** A response body as JSON; tests read whatever fields they check. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read bodies loosely
export type Body = Record<string, any>;
export const bodyOf = async (res: Response): Promise<Body> => (await res.json()) as Body;

export const basic = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

/** Scripted upstream answers shared by the route tests. */
export const textStream = (text = "Hello") =>
  sseResponse(
    sseText([
      chunk({ role: "assistant", content: null }),
      chunk({ content: text.slice(0, 3) }),
      chunk({ content: text.slice(3) }),
      chunk({}, "stop"),
      {
        choices: [],
        usage: {
          prompt_tokens: 12,
          completion_tokens: 2,
          prompt_tokens_details: { cached_tokens: 5 },
        },
      },
    ]),
  );

export const toolStream = () =>
  sseResponse(
    sseText([
      chunk({
        tool_calls: [
          {
            index: 0,
            id: "call_a",
            type: "function",
            function: { name: "get_weather", arguments: "" },
          },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({
        tool_calls: [
          {
            index: 1,
            id: "call_b",
            type: "function",
            function: { name: "get_time", arguments: '{"tz":"UTC"}' },
          },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({}, "tool_calls"),
    ]),
  );

export const completion = (message: object, finish: string) =>
  Response.json({
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 9, completion_tokens: 4 },
  });
