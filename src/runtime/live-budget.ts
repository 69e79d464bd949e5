import type { ResourcesConfig } from "../config/types.ts";
import type { BudgetView } from "../policy/types.ts";

/**
 * The memory limits the policy admits against. Read on every decision (a plain field read);
 * written by the GPU probe loop. Without a trustworthy reading the static budget stands.
 */
export class LiveBudget implements BudgetView {
  private ceiling: number | null = null;
  /** Why the live ceiling is what it is (or why there is none), for `qm status`. */
  note = "no GPU reading yet: the static budget applies";

  constructor(private readonly resources: ResourcesConfig) {}

  vramGb(): number {
    const budget = this.resources.vramBudgetGb;
    if (budget <= 0) return 0;
    return this.ceiling === null ? budget : Math.max(0, Math.min(budget, this.ceiling));
  }

  ramGb(): number {
    return this.resources.ramBudgetGb;
  }

  /** Set by the GPU watch: remembered spawn-guard refusals. */
  refusalOf: (model: string) => string | null = () => null;

  refusal(model: string): string | null {
    return this.refusalOf(model);
  }

  /** A trustworthy reading's ceiling, or null to fall back to the static budget. */
  setCeiling(gb: number | null, note: string): void {
    this.ceiling = gb;
    this.note = note;
  }
}
