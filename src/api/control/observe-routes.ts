/**
 * `GET /api/requests`: the activity log, newest first (`?limit=N`, `?model=ID`). The record's
 * fields are documented in docs/api.md; no prompt or answer text is ever kept.
 *
 * `GET /api/requests/{id}`: one record of the activity log, with what was captured of its
 * request and answer (`[activity] capture`; `capture: null` when off or dropped since). The
 * list and `event: request` never carry captured text.
 *
 * `GET /api/usage`: usage per key × model × hour (`usageRoute`).
 *
 * `GET /metrics`: the Prometheus text format, on the metrics listener (`server.metrics_listen`,
 * which serves nothing else) and, with `server.metrics_on_api`, on the API listeners too.
 */
import { Elysia } from "elysia";
import { sumByKey } from "../../observe/usage.ts";
import { QmError } from "../../shared/errors.ts";
import type { Logger } from "../../shared/log.ts";
import { keyOf } from "../edge/caller.ts";
import { type MetricsHosts, metricsGate } from "../edge/metrics-gate.ts";
import type { ObserveGateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { badRequest } from "../request/body.ts";
import type { UsageJson } from "../status-json.ts";

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
    // A key that is no admin sees its own requests only; an admin may ask for one key's.
    const caller = keyOf(request);
    const key = caller.admin ? (query.get("key") ?? undefined) : caller.name;
    return Response.json({ requests: gw.activity.list({ limit, model, key }) });
  });
}

/** `GET /api/requests/{id}`. */
export function requestRoute(gw: ObserveGateway) {
  return new Elysia().get("/api/requests/:id", ({ params, request }) => {
    const text = params.id;
    if (!/^[1-9]\d{0,15}$/.test(text)) {
      return openaiError(
        badRequest(`id must be a request's number (1, 2, …), got ${JSON.stringify(text)}`, "id"),
      );
    }
    // Another key's request is not found, as one never made (a key that is no admin).
    const caller = keyOf(request);
    const found = gw.activity.get(Number(text), caller.admin ? undefined : caller.name);
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

const DAY_MS = 24 * 3600 * 1000;

/** A time in a query: epoch ms, or an ISO 8601 date or date-time; null when malformed. */
function timeParam(text: string): number | null {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (!/^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return null;
  const t = Date.parse(text);
  return Number.isFinite(t) ? t : null;
}

/**
 * `GET /api/usage?key=NAME&since=…&until=…`: usage per key × model × hour (requests, tokens,
 * wait, swaps caused), with each key's totals. `since` and `until` are epoch ms or ISO 8601
 * (default: the last 24 hours). An admin key may ask for any key's (or all); another key gets
 * its own, and 403 for another's.
 */
export function usageRoute(gw: ObserveGateway) {
  return new Elysia().get("/api/usage", ({ request }) => {
    const usage = gw.usage;
    if (!usage) {
      return openaiError(
        new QmError(
          "not_found",
          "usage is not kept: [activity] enabled = false and no database ([store] enabled, or it could not be opened)",
        ),
      );
    }
    const query = new URL(request.url).searchParams;
    const caller = keyOf(request);
    const asked = query.get("key");
    if (asked !== null && !caller.admin && asked !== caller.name) {
      return openaiError(
        new QmError("forbidden", `key "${caller.name}" may see its own usage only`, {
          param: "key",
        }),
      );
    }
    const times: Record<string, number | undefined> = {};
    for (const name of ["since", "until"] as const) {
      const text = query.get(name);
      if (text === null) continue;
      const t = timeParam(text);
      if (t === null) {
        return openaiError(
          badRequest(
            `${name} must be epoch milliseconds or an ISO 8601 date or date-time, got ${JSON.stringify(text.slice(0, 40))}`,
            name,
          ),
        );
      }
      times[name] = t;
    }
    const since = times.since ?? Date.now() - DAY_MS;
    const key = caller.admin ? (asked ?? undefined) : caller.name;
    const rows = usage.query({ key, since, until: times.until });
    const totals: Record<string, Omit<UsageJson, "hour_ms" | "key" | "model">> = {};
    for (const t of sumByKey(rows)) {
      const { hour: _, key: name, model: __, ...sums } = t;
      totals[name] = sums;
    }
    const usageJson: UsageJson[] = rows.map(({ hour, ...rest }) => ({
      hour_ms: hour,
      ...rest,
      wait_ms: Math.round(rest.wait_ms),
    }));
    for (const t of Object.values(totals)) t.wait_ms = Math.round(t.wait_ms);
    return Response.json({ since, until: times.until ?? null, usage: usageJson, totals });
  });
}
