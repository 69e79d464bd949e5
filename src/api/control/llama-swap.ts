/**
 * llama-swap's own routes, so scripts written for it keep working against qm (behind the API
 * key, like every control route):
 *   GET /logs                  the recent log as text: qm's own lines, then each model's output
 *                              lines prefixed `[ID] ` (a browser asking for HTML goes to /ui/)
 *   GET /logs/stream[/WHICH]   that text, then every new line as it comes (chunked text/plain);
 *                              WHICH = `proxy` (qm's own lines) or `upstream` (models' lines);
 *                              `?no-history` skips what was already there
 *   GET /unload                unloads every model; answers "OK"
 * llama-swap interleaves its two logs in time; qm gives its own history first, then the
 * models'. Reference: llama-swap's proxy/proxymanager_loghandlers.go.
 */
import { Elysia } from "elysia";
import { asQmError, QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { noIdleTimeout } from "../edge/idle.ts";
import type { ControlGateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";

/** The paths and the method each answers, for a 405's `Allow`. */
export const LLAMA_SWAP_PATHS: [RegExp, string][] = [
  [/^\/(?:logs|logs\/stream(?:\/[^/]+)?|unload)$/, "GET"],
];

type Which = "all" | "proxy" | "upstream";

const TEXT = { "content-type": "text/plain; charset=utf-8" };

/** The lines kept so far: qm's own, then each model's with its id in front. */
function history(gw: ControlGateway, log: Logger, which: Which): string[] {
  const own = which === "upstream" ? [] : (log.feed?.lines() ?? []);
  if (which === "proxy") return own;
  const models = gw.status().models.flatMap((m) => gw.logs(m.id).map((l) => `[${m.id}] ${l}`));
  return [...own, ...models];
}

/** Calls `send` with every new line of `which` until the returned function is called. */
function follow(
  gw: ControlGateway,
  log: Logger,
  which: Which,
  send: (line: string) => void,
): () => void {
  const stops: (() => void)[] = [];
  if (which !== "upstream" && log.feed) stops.push(log.feed.follow(send));
  if (which !== "proxy") {
    for (const { id } of gw.status().models) {
      stops.push(gw.followLogs(id, (line) => send(`[${id}] ${line}`)));
    }
  }
  return () => {
    for (const stop of stops) stop();
  };
}

const encoder = new TextEncoder();

/** Chunked text: the history (unless skipped), then each new line, until the client leaves. */
function stream(
  request: Request,
  lines: string[],
  subscribe: (send: (l: string) => void) => () => void,
) {
  let stop = () => {};
  let closed = false;
  const close = () => {
    closed = true;
    stop();
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (line: string) => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(`${line}\n`));
        } catch {
          close();
        }
      };
      for (const line of lines) send(line);
      const off = subscribe(send);
      if (closed) off();
      else stop = off;
      request.signal.addEventListener("abort", close, { once: true });
    },
    cancel: close,
  });
  return new Response(body, {
    headers: { ...TEXT, "cache-control": "no-cache", "x-content-type-options": "nosniff" },
  });
}

function streamRoute(gw: ControlGateway, log: Logger, request: Request, which: string | undefined) {
  if (which !== undefined && which !== "proxy" && which !== "upstream") {
    return openaiError(
      new QmError(
        "bad_request",
        `no log "${which}": use /logs/stream/proxy or /logs/stream/upstream`,
      ),
    );
  }
  const w: Which = which ?? "all";
  noIdleTimeout(request);
  const skip = new URL(request.url).searchParams.has("no-history");
  return stream(request, skip ? [] : history(gw, log, w), (send) => follow(gw, log, w, send));
}

export function llamaSwapRoutes(gw: ControlGateway, log: Logger) {
  return new Elysia()
    .get("/logs", ({ request }) => {
      if (request.headers.get("accept")?.includes("text/html")) {
        return new Response(null, { status: 302, headers: { location: "/ui/" } });
      }
      const lines = history(gw, log, "all");
      return new Response(lines.map((l) => `${l}\n`).join(""), { headers: TEXT });
    })
    .get("/logs/stream", ({ request }) => streamRoute(gw, log, request, undefined))
    .get("/logs/stream/:which", ({ request, params }) =>
      streamRoute(gw, log, request, params.which),
    )
    .get("/unload", () => {
      try {
        gw.unload(null);
      } catch (err) {
        return openaiError(asQmError(err));
      }
      return new Response("OK", { headers: TEXT });
    });
}
