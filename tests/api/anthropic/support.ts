/**
 * Test support for the Anthropic routes: a scripted fake OpenAI upstream on port 0, the app
 * with a short ping period, readers for Anthropic SSE, and scripted answers.
 */

import { Elysia } from "elysia";
import { createParser } from "eventsource-parser";
import { anthropicRoutes } from "../../../src/api/anthropic/routes.ts";
import type { Gateway } from "../../../src/api/gateway.ts";
import { appOf, quietLog } from "../../support/in-process.ts";
import { chunk, sseResponse, sseText } from "../../support/openai-answers.ts";

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

/** The full app (auth, 404s) or just the Anthropic routes with a short ping period. */
export function appFor(gw: Gateway, pingMs?: number) {
  if (pingMs === undefined) return appOf(gw);
  return new Elysia().use(anthropicRoutes(gw, { pingMs, log: quietLog() }));
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
