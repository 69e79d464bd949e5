/**
 * qm's own request controls, the same on every API: `X-QM-Hold-Ms` (the idle-grace hold this
 * request asks for) and `X-QM-Patience-Ms` (how long it honours other models' holds).
 */
import { MAX_TIMER_MS } from "../../config/schema.ts";
import type { AcquireHooks } from "../gateway.ts";
import { badRequest } from "./body.ts";

/** A non-negative whole number of milliseconds from a request header, if present. */
function msHeader(headers: Headers, name: string): number | undefined {
  const raw = headers.get(name);
  if (raw === null) return undefined;
  const n = Number(raw.trim());
  if (raw.trim() === "" || !Number.isInteger(n) || n < 0 || n > MAX_TIMER_MS) {
    throw badRequest(
      `${name} must be a whole number of milliseconds from 0 to ${MAX_TIMER_MS}, got "${raw.slice(0, 40)}"`,
    );
  }
  return n;
}

/** Per-request scheduling options: `X-QM-Hold-Ms` and `X-QM-Patience-Ms`. */
export function schedulingHeaders(headers: Headers): Pick<AcquireHooks, "holdMs" | "patienceMs"> {
  return {
    holdMs: msHeader(headers, "x-qm-hold-ms"),
    patienceMs: msHeader(headers, "x-qm-patience-ms"),
  };
}
