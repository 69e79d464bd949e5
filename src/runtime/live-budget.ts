import type { ResourcesConfig } from "../config/types.ts";
import type { BudgetView } from "../policy/types.ts";

/**
 * The memory limits the policy admits against. Read on every decision (a plain field read);
 * written by the GPU probe loop. Without a trustworthy reading the static budget stands.
 */
export class LiveBudget implements BudgetView {
  /** What admission uses now: `effectiveBudgetGb` of the latest reading (0 = no budget). */
  private vram: number;
  /** Why the VRAM limit is what it is, for `qm status`. */
  note = "no GPU reading yet: the static budget applies";

  constructor(private readonly resources: ResourcesConfig) {
    this.vram = resources.vramBudgetGb;
  }

  vramGb(): number {
    return this.vram;
  }

  ramGb(): number {
    return this.resources.ramBudgetGb;
  }

  /** Set by the GPU watch: remembered spawn-guard refusals. */
  refusalOf: (model: string) => string | null = () => null;

  refusal(model: string): string | null {
    return this.refusalOf(model);
  }

  set(vramGb: number, note: string): void {
    this.vram = vramGb;
    this.note = note;
  }
}
