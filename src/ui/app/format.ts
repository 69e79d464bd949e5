/** Figures as the dashboard shows them: short, fixed units, "–" for unknown. Pure. */

export const NONE = "–";

/** Milliseconds: `850 ms`, `1.2 s`, `2m 05s`, `1h 02m`. */
export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 10_000) return `${(v / 1000).toFixed(1)} s`;
  return duration(v);
}

/** A span of time to the second: `7s`, `2m 05s`, `1h 02m`. */
export function duration(v: number): string {
  const s = Math.max(0, Math.round(v / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${String(m % 60).padStart(2, "0")}m`;
}

/** Gigabytes with at most one decimal: `6.5 GB`, `0 GB`. */
export function gb(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  return `${Math.round(v * 10) / 10} GB`;
}

/** A whole count, or "–". */
export function count(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  return String(Math.round(v));
}

/** Tokens per second: `42.1`, `312`. */
export function rate(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  return v < 100 ? v.toFixed(1) : String(Math.round(v));
}

/** A fraction 0..1 as a whole percentage. */
export function percent(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return NONE;
  return `${Math.round(Math.min(1, Math.max(0, v)) * 100)}%`;
}

/** Local wall-clock time of an epoch ms, `14:03:27`. */
export function clock(epochMs: number): string {
  const d = new Date(epochMs);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/**
 * Output speed of a streamed answer: completion tokens over the time from the first chunk to
 * the end (the wait and the prefill excluded), as qm_output_tokens_per_second counts it. Null
 * without tokens, without a first chunk, or over no time.
 */
export function tokensPerSecond(r: {
  completion_tokens: number | null;
  duration_ms: number;
  ttft_ms: number | null;
}): number | null {
  if (r.completion_tokens === null || r.ttft_ms === null) return null;
  const s = (r.duration_ms - r.ttft_ms) / 1000;
  return s > 0 ? r.completion_tokens / s : null;
}

/** What is left until an epoch ms, for countdowns; null once it has passed. */
export function remaining(untilMs: number | null, nowMs: number): number | null {
  if (untilMs === null) return null;
  const left = untilMs - nowMs;
  return left > 0 ? left : null;
}
