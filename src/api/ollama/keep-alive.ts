/**
 * Ollama's `keep_alive` (docs/api.md, "keep_alive"): how long the model stays loaded after this
 * request. A number is seconds; a string is a Go duration ("5m", "1h30m", "10s", "250ms",
 * "1.5h"), or a plain number of seconds as text; `0` unloads the model once the answer is over;
 * anything negative keeps it resident. Ollama reads numbers and strings the same way
 * (`api.Duration.UnmarshalJSON`).
 */
import { MAX_TIMER_MS } from "../../config/schema.ts";
import { badRequest } from "../request/body.ts";

/** Keep the model resident: no idle unload. */
export const FOREVER = -1;

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** A Go duration in milliseconds (may be negative), or null when it is not one. */
export function goDurationMs(text: string): number | null {
  let s = text.trim();
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return null;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== at) return null;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  return sign * total;
}

/**
 * `keep_alive` as milliseconds after the answer (`0`: unload now; `FOREVER`), or undefined when
 * absent (the model's own `ttl_s` applies). Longer than a timer can wait counts as for ever.
 */
export function keepAliveMs(raw: unknown): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  let ms: number | null = null;
  if (typeof raw === "number" && Number.isFinite(raw)) ms = raw * 1000;
  else if (typeof raw === "string") {
    const t = raw.trim();
    ms = t !== "" && Number.isFinite(Number(t)) ? Number(t) * 1000 : goDurationMs(t);
  }
  if (ms === null) {
    throw badRequest(
      `"keep_alive" must be a duration such as "5m", "1h30m" or "10s", or a number of seconds; got ${JSON.stringify(raw).slice(0, 40)}`,
      "keep_alive",
    );
  }
  if (ms < 0 || ms > MAX_TIMER_MS) return FOREVER;
  return Math.round(ms);
}
