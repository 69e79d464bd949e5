/** Usage rows (`GET /api/usage`) summed per key, busiest first. Pure. */
import type { UsageRow } from "./wire.ts";

export interface KeyUsage {
  key: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  /** Mean wait for a model per request, ms; null with no request. */
  meanWaitMs: number | null;
  swaps: number;
  /** The models it used, most requests first. */
  models: string[];
}

export function usageByKey(rows: readonly UsageRow[]): KeyUsage[] {
  const by = new Map<string, KeyUsage & { waitMs: number; perModel: Map<string, number> }>();
  for (const r of rows) {
    let k = by.get(r.key);
    if (!k) {
      k = {
        key: r.key,
        requests: 0,
        promptTokens: 0,
        completionTokens: 0,
        meanWaitMs: null,
        swaps: 0,
        models: [],
        waitMs: 0,
        perModel: new Map(),
      };
      by.set(r.key, k);
    }
    k.requests += r.requests;
    k.promptTokens += r.prompt_tokens;
    k.completionTokens += r.completion_tokens;
    k.swaps += r.swaps;
    k.waitMs += r.wait_ms;
    k.perModel.set(r.model, (k.perModel.get(r.model) ?? 0) + r.requests);
  }
  return [...by.values()]
    .map(({ waitMs, perModel, ...k }) => ({
      ...k,
      meanWaitMs: k.requests > 0 ? waitMs / k.requests : null,
      models: [...perModel].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([m]) => m),
    }))
    .sort((a, b) => b.requests - a.requests || a.key.localeCompare(b.key));
}
