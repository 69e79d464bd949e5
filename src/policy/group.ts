import type { Config, GroupConfig, ModelConfig } from "../config/types.ts";
import { fitWithin, type Resident } from "./budget.ts";
import { placeOnCards } from "./cards.ts";
import { type BudgetView, type Eviction, type EvictionPolicy, staticBudget } from "./types.ts";

/**
 * The group policy.
 *
 * Static rules (no budget, or a target whose estimate is unknown):
 * - a running member of the target's own group is stopped when that group has `swap = true`;
 * - a running member of another group is stopped only when the *target's* group is
 *   `exclusive`, and never when the other group is `persistent`.
 * Deliberately kept legacy quirk: loading a member of a non-exclusive group does not evict
 * anything outside its group, even members of exclusive groups. Exclusivity is a property of
 * the group being loaded, not of the groups already resident.
 *
 * Budgets (src/policy/design.md): with a VRAM budget and a known `est_vram_gb`, the target is
 * admitted when it fits beside the residents, else least-recently-used residents are evicted
 * until it fits. Two pools: `pool = "ram"` groups are CPU models, admitted against the RAM
 * budget, and only ever evict each other; a GPU target's `est_ram_gb` (offload spill) is
 * charged to RAM too and may evict RAM-pool models. Each pool's static rules see only that
 * pool's residents.
 */
export class GroupPolicy implements EvictionPolicy {
  private readonly groupOf = new Map<string, GroupConfig>();
  private readonly models: Record<string, ModelConfig>;

  constructor(
    config: Pick<Config, "models" | "groups" | "resources">,
    private readonly budget: BudgetView = staticBudget(config.resources),
  ) {
    this.models = config.models;
    for (const model of Object.values(config.models)) {
      const group = config.groups[model.group];
      if (group) this.groupOf.set(model.id, group);
    }
  }

  addVariant(variant: string, base: string): void {
    const group = this.groupOf.get(base);
    if (group) this.groupOf.set(variant, group);
  }

  evictionFor(target: string, running: readonly string[]): Eviction {
    const own = this.groupOf.get(target);
    const model = this.models[target];
    if (!own || !model) return { ok: false, reason: `model "${target}" belongs to no group` };
    const refused = this.budget.refusal?.(target);
    if (refused) return { ok: false, reason: refused };
    // A resident we know nothing about (removed from config) cannot be accounted for.
    const strangers = running.filter((id) => id !== target && !this.groupOf.has(id));
    const residents: Resident[] = running
      .filter((id) => id !== target && this.groupOf.has(id))
      .map((id) => ({ model: this.models[id]!, persistent: this.groupOf.get(id)!.persistent }));
    const inRam = (r: Resident) => this.groupOf.get(r.model.id)!.pool === "ram";
    const ramLimit = this.budget.ramGb();

    if (own.pool === "ram") {
      const cpu = residents.filter(inRam);
      if (ramLimit > 0 && model.estRamGb > 0) {
        const fit = fitWithin({
          pool: "RAM",
          target: model,
          need: model.estRamGb,
          limit: ramLimit,
          residents,
          estimate: (m) => m.estRamGb,
          evictable: inRam,
          unknownIsFree: true,
        });
        if (fit.kind === "cannot") return { ok: false, reason: fit.reason, pool: "RAM" };
        if (fit.kind === "fits") {
          return { ok: true, evict: [...strangers, ...fit.evict], budget: fit.evict };
        }
      }
      return { ok: true, evict: [...strangers, ...this.staticEviction(own, cpu)] };
    }

    const gpu = residents.filter((r) => !inRam(r));
    let evict: string[];
    let budget: string[] = [];
    let gpus: number[] | undefined;
    const vramLimit = this.budget.vramGb();
    const cards = this.budget.cards?.() ?? [];
    let fit: ReturnType<typeof fitWithin>;
    if (cards.length > 0) {
      // Several GPUs: per-card ceilings replace the box-wide one (design.md "several GPUs").
      const placed = placeOnCards({
        target,
        needGb: model.estVramGb,
        want: model.gpus ?? 1,
        cards,
        residents: gpu.map((r) => ({
          id: r.model.id,
          estGb: r.model.estVramGb,
          gpus: this.budget.placement?.(r.model.id) ?? [],
          persistent: r.persistent,
        })),
      });
      if (placed.kind === "cannot") return { ok: false, reason: placed.reason };
      gpus = placed.gpus;
      fit = model.estVramGb > 0 ? { kind: "fits", evict: placed.evict } : { kind: "unknown" };
    } else {
      fit =
        vramLimit > 0
          ? fitWithin({
              pool: "VRAM",
              target: model,
              need: model.estVramGb,
              limit: vramLimit,
              residents: gpu,
              estimate: (m) => m.estVramGb,
              evictable: () => true,
              unknownIsFree: false,
            })
          : ({ kind: "unknown" } as const);
    }
    if (fit.kind === "cannot") return { ok: false, reason: fit.reason };
    evict = fit.kind === "fits" ? fit.evict : this.staticEviction(own, gpu);
    if (fit.kind === "fits") budget = fit.evict;

    if (ramLimit > 0 && model.estRamGb > 0) {
      const gone = new Set(evict);
      const ram = fitWithin({
        pool: "RAM",
        target: model,
        need: model.estRamGb,
        limit: ramLimit,
        residents: residents.filter((r) => !gone.has(r.model.id)),
        estimate: (m) => m.estRamGb,
        evictable: inRam,
        unknownIsFree: true,
      });
      if (ram.kind === "cannot") return { ok: false, reason: ram.reason, pool: "RAM" };
      if (ram.kind === "fits") {
        evict = [...evict, ...ram.evict];
        budget = [...budget, ...ram.evict];
      }
    }
    return {
      ok: true,
      evict: [...strangers, ...evict],
      budget,
      ...(gpus === undefined ? {} : { gpus }),
    };
  }

  private staticEviction(own: GroupConfig, residents: readonly Resident[]): string[] {
    const evict: string[] = [];
    for (const r of residents) {
      const other = this.groupOf.get(r.model.id)!;
      if (other === own) {
        if (own.swap) evict.push(r.model.id);
      } else if (own.exclusive && !other.persistent) {
        evict.push(r.model.id);
      }
    }
    return evict;
  }
}
