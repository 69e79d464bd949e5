/** Per-model figures over the recent requests, for the Performance page. Pure. */
import { tokensPerSecond } from "./format.ts";
import type { RequestRecord } from "./wire.ts";

export interface ModelPerf {
  model: string;
  requests: number;
  /** Answered with an error status, or not answered in full. */
  failed: number;
  swaps: number;
  ttftP50: number | null;
  ttftP90: number | null;
  tpsP50: number | null;
  waitP50: number | null;
  durationP50: number | null;
  tokensIn: number;
  tokensOut: number;
}

/** The q-quantile (0..1) of `xs` by the nearest-rank method; null when empty. */
export function quantile(xs: readonly number[], q: number): number | null {
  if (xs.length === 0) return null;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1]!;
}

export function summarize(records: readonly RequestRecord[]): ModelPerf[] {
  const by = new Map<string, RequestRecord[]>();
  for (const r of records) {
    if (r.api === "load") continue;
    const list = by.get(r.model) ?? [];
    list.push(r);
    by.set(r.model, list);
  }
  return [...by.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([model, rs]) => {
      const ttft = rs.flatMap((r) => (r.ttft_ms === null ? [] : [r.ttft_ms]));
      const tps = rs.flatMap((r) => {
        const v = tokensPerSecond(r);
        return v === null ? [] : [v];
      });
      const waits = rs.flatMap((r) => (r.wait_ms === null ? [] : [r.wait_ms]));
      return {
        model,
        requests: rs.length,
        failed: rs.filter((r) => r.status >= 400 || !r.answered).length,
        swaps: rs.filter((r) => r.swap).length,
        ttftP50: quantile(ttft, 0.5),
        ttftP90: quantile(ttft, 0.9),
        tpsP50: quantile(tps, 0.5),
        waitP50: quantile(waits, 0.5),
        durationP50: quantile(
          rs.map((r) => r.duration_ms),
          0.5,
        ),
        tokensIn: rs.reduce((n, r) => n + (r.prompt_tokens ?? 0), 0),
        tokensOut: rs.reduce((n, r) => n + (r.completion_tokens ?? 0), 0),
      };
    });
}
