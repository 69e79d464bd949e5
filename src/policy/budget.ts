import type { ModelConfig } from "../config/types.ts";

/**
 * Memory accounting for the group policy (src/policy/design.md). Pure: the caller passes the
 * residents least-recently-used first and the limits in force right now.
 */
export interface Resident {
  model: ModelConfig;
  persistent: boolean;
}

export type BudgetOutcome =
  | { kind: "fits"; evict: string[] }
  | { kind: "cannot"; reason: string }
  /** The target's estimate is unknown: admitting it blind is how a box OOMs. */
  | { kind: "unknown" };

const gb = (n: number) => `${Math.round(n * 100) / 100} GB`;

/**
 * Admit `need` beside the residents within `limit`; otherwise evict least-recently-used
 * evictable residents until it fits, stopping the moment it does. Residents whose own
 * estimate is unknown (0) are evicted first — their footprint cannot be accounted for —
 * unless `unknownIsFree` (RAM: a model with no RAM estimate simply uses none we track).
 * Persistent residents are charged and never evicted.
 */
export function fitWithin(opts: {
  pool: "VRAM" | "RAM";
  target: ModelConfig;
  need: number;
  limit: number;
  residents: readonly Resident[];
  estimate: (m: ModelConfig) => number;
  /** Only these may be evicted (e.g. RAM pressure may only evict RAM-pool models). */
  evictable: (r: Resident) => boolean;
  unknownIsFree: boolean;
}): BudgetOutcome {
  const { need, limit, residents, estimate } = opts;
  if (need <= 0) return { kind: "unknown" };
  if (need > limit) {
    return {
      kind: "cannot",
      reason:
        `model "${opts.target.id}" needs ${gb(need)} of ${opts.pool} but the ` +
        `${opts.pool} ceiling is ${gb(limit)}: it cannot fit even alone`,
    };
  }
  const evict: string[] = [];
  const gone = new Set<string>();
  let used = residents.reduce((sum, r) => sum + estimate(r.model), 0);
  if (!opts.unknownIsFree) {
    for (const r of residents) {
      if (estimate(r.model) <= 0 && !r.persistent && opts.evictable(r)) {
        evict.push(r.model.id);
        gone.add(r.model.id);
      }
    }
  }
  for (const r of residents) {
    if (used + need <= limit) break;
    if (gone.has(r.model.id) || r.persistent || !opts.evictable(r)) continue;
    evict.push(r.model.id);
    gone.add(r.model.id);
    used -= estimate(r.model);
  }
  if (used + need > limit) {
    const kept = residents.filter((r) => !gone.has(r.model.id)).map((r) => r.model.id);
    return {
      kind: "cannot",
      reason:
        `model "${opts.target.id}" needs ${gb(need)} of ${opts.pool}; ${gb(used)} stays in use ` +
        `by models that cannot be evicted (${kept.join(", ")}) and the ceiling is ${gb(limit)}`,
    };
  }
  return { kind: "fits", evict };
}
