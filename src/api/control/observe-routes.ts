/**
 * `GET /api/requests`: the activity log, newest first (`?limit=N`, `?model=ID`). The record's
 * fields are documented in docs/api.md; no prompt or answer text is ever kept.
 *
 * `GET /api/requests/{id}`: one record of the activity log, with what was captured of its
 * request and answer (`[activity] capture`; `capture: null` when off or dropped since). The
 * list and `event: request` never carry captured text.
 *
 * `GET /metrics`: the Prometheus text format, on the metrics listener (`server.metrics_listen`,
 * which serves nothing else) and, with `server.metrics_on_api`, on the API listeners too.
 */
import { Elysia } from "elysia";
import { QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { type MetricsHosts, metricsGate } from "../edge/metrics-gate.ts";
import type { ObserveGateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { badRequest } from "../request/body.ts";

export function activityRoutes(gw: ObserveGateway) {
  return new Elysia().get("/api/requests", ({ request }) => {
    const q = request.url.indexOf("?");
    const query = new URLSearchParams(q < 0 ? "" : request.url.slice(q + 1));
    const limitText = query.get("limit");
    let limit: number | undefined;
    if (limitText !== null) {
      limit = /^\d+$/.test(limitText) ? Number(limitText) : Number.NaN;
      if (!Number.isSafeInteger(limit) || limit < 1) {
        return openaiError(
          badRequest(
            `limit must be a whole number of at least 1, got ${JSON.stringify(limitText)}`,
            "limit",
          ),
        );
      }
    }
    const name = query.get("model");
    // An alias names its model; a name that resolves to nothing (a variant gone since) is
    // matched as it is.
    const model = name === null ? undefined : (gw.resolve(name)?.id ?? name);
    return Response.json({ requests: gw.activity.list({ limit, model }) });
  });
}

/** `GET /api/requests/{id}`. */
export function requestRoute(gw: ObserveGateway) {
  return new Elysia().get("/api/requests/:id", ({ params }) => {
    const text = params.id;
    if (!/^[1-9]\d{0,15}$/.test(text)) {
      return openaiError(
        badRequest(`id must be a request's number (1, 2, …), got ${JSON.stringify(text)}`, "id"),
      );
    }
    const found = gw.activity.get(Number(text));
    if (found === null) {
      return openaiError(
        new QmError(
          "not_found",
          `no request ${text} in the activity log (it keeps the latest ${gw.activity.size}; [activity] size)`,
        ),
      );
    }
    return Response.json(found);
  });
}

/** One scrape of `gw`'s metrics. */
export async function scrape(gw: ObserveGateway): Promise<Response> {
  const text = await gw.metrics.text();
  return new Response(text, { headers: { "content-type": gw.metrics.contentType } });
}

/** `GET /metrics` among the API routes (`server.metrics_on_api`). */
export function metricsRoutes(gw: ObserveGateway) {
  return new Elysia().get("/metrics", () => scrape(gw));
}

/**
 * The metrics listener's whole handler: a Host `hosts` does not admit is refused (403), then
 * `GET /metrics` (HEAD too), a 405 for another method there, and a 404 in the OpenAI envelope
 * for every other path.
 */
export function metricsHandler(
  gw: ObserveGateway,
  log: Logger,
  hosts: MetricsHosts,
): (request: Request) => Promise<Response> {
  const gate = metricsGate(hosts);
  return async (request) => {
    const refused = gate(request);
    if (refused) return openaiError(refused);
    const path = new URL(request.url).pathname;
    if (path !== "/metrics") {
      return openaiError(
        new QmError(
          "not_found",
          `no route for ${request.method} ${path}; this listener serves GET /metrics`,
        ),
      );
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return openaiError(
        new QmError("method_not_allowed", `${request.method} is not allowed on /metrics; use GET`),
        { allow: "GET, HEAD" },
      );
    }
    try {
      const res = await scrape(gw);
      return request.method === "HEAD" ? new Response(null, { headers: res.headers }) : res;
    } catch (error) {
      log.error(`GET /metrics: ${error instanceof Error ? error.message : String(error)}`);
      return openaiError(new QmError("internal", "qm failed to collect its metrics (see its log)"));
    }
  };
}
