/**
 * `GET /api/history?minutes=N`: what the GPU held over the last N minutes (default and most 30;
 * more is read as 30), which models were loading and resident when, and the swaps with their
 * causes — the data behind the dashboard's charts (src/gpu/history.ts). Times are ms since the
 * epoch. A `minutes` that is not a positive number is a 400 in the OpenAI envelope. A key that
 * is no admin sees only its models (docs/security.md, "What each key sees").
 */
import { Elysia } from "elysia";
import { HISTORY_MINUTES } from "../../gpu/history.ts";
import { QmError } from "../../shared/errors.ts";
import { keyOf } from "../edge/caller.ts";
import { historyFor } from "../edge/visible.ts";
import type { ControlGateway } from "../gateway.ts";
import { openaiError } from "../openai/errors.ts";

/** `minutes` as asked, or why it cannot be read. */
export function historyMinutes(url: string): number | QmError {
  const q = url.indexOf("?");
  const raw = q < 0 ? null : new URLSearchParams(url.slice(q + 1)).get("minutes");
  if (raw === null) return HISTORY_MINUTES;
  const n = /^\d{1,6}(\.\d{1,6})?$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!(n > 0)) {
    return new QmError(
      "bad_request",
      "minutes must be a number of minutes above 0 (at most 30 are kept)",
      {
        param: "minutes",
      },
    );
  }
  return Math.min(n, HISTORY_MINUTES);
}

/** Every key may read it: one that is no admin sees its own models only (`historyFor`). */
export function historyRoutes(gw: ControlGateway) {
  return new Elysia().get("/api/history", ({ request }) => {
    const minutes = historyMinutes(request.url);
    if (minutes instanceof QmError) return openaiError(minutes);
    const all = gw.history?.(minutes) ?? { memory: [], residency: [], swaps: [] };
    return Response.json(historyFor(gw, keyOf(request), all), {
      headers: { "cache-control": "no-store" },
    });
  });
}
