/**
 * `GET /api/requests`: the activity log, newest first (`?limit=N`, `?model=ID`). The record's
 * fields are documented in docs/api.md; no prompt or answer text is ever kept.
 */
import { Elysia } from "elysia";
import type { Gateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";
import { badRequest } from "../request/body.ts";

export function activityRoutes(gw: Gateway) {
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
