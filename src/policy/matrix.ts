import type { Config } from "../config/types.ts";
import type { Eviction, EvictionPolicy } from "./types.ts";

/** What evicting an `evict = "sleep"` model costs when `matrix.evict_cost` does not list it. */
export const SLEEP_EVICT_COST = 0.1;

/**
 * The matrix policy (`router.policy = "matrix"`): `matrix.sets` lists the model sets allowed to
 * be resident together. To run a target, pick among the sets that contain it the one whose
 * residents-to-evict cost least in total (`matrix.evict_cost`, default 1 per model); ties go to
 * the set listed first. A model in no set runs alone. Pure, and linear in sets × residents.
 */
export class MatrixPolicy implements EvictionPolicy {
  private readonly setsOf = new Map<string, ReadonlySet<string>[]>();
  private readonly cost: (id: string) => number;

  constructor(config: Pick<Config, "matrix"> & Partial<Pick<Config, "models">>) {
    for (const members of config.matrix.sets) {
      const set: ReadonlySet<string> = new Set(members);
      for (const id of set) {
        const list = this.setsOf.get(id) ?? [];
        list.push(set);
        this.setsOf.set(id, list);
      }
    }
    const costs = config.matrix.evictCost;
    const models = config.models ?? {};
    // Evicting an `evict = "sleep"` model costs a fraction of a stop: it comes back in seconds.
    const unlisted = (id: string) =>
      Object.hasOwn(models, id) && models[id]!.evict === "sleep" ? SLEEP_EVICT_COST : 1;
    this.cost = (id) => (Object.hasOwn(costs, id) ? costs[id]! : unlisted(id));
  }

  addVariant(variant: string, base: string): void {
    // A variant may sit wherever its base may; the sets it shares keep listing the base, so
    // the variant is added to each of them.
    const sets = this.setsOf.get(base);
    if (!sets) return;
    const widened = sets.map((s) => new Set([...s, variant]));
    this.setsOf.set(variant, widened);
  }

  evictionFor(target: string, running: readonly string[]): Eviction {
    const others = running.filter((id) => id !== target);
    const sets = this.setsOf.get(target);
    if (!sets) return { ok: true, evict: others };
    let best: ReadonlySet<string> | null = null;
    let bestCost = Number.POSITIVE_INFINITY;
    for (const set of sets) {
      let c = 0;
      for (const id of others) if (!set.has(id)) c += this.cost(id);
      if (c < bestCost) {
        best = set;
        bestCost = c;
        if (c === 0) break;
      }
    }
    const keep = best!;
    return { ok: true, evict: others.filter((id) => !keep.has(id)) };
  }
}
