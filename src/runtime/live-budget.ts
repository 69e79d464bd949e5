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

  /**
   * The RAM budget less what sleeping models hold there (`evict = "sleep"` at level 1 keeps
   * its weights in host RAM: its `est_ram_gb` stays charged while it sleeps). With a budget,
   * never 0 (which would mean "no budget"): a full pool admits nothing more.
   */
  ramGb(): number {
    const budget = this.resources.ramBudgetGb;
    if (budget <= 0) return budget;
    return Math.max(Number.EPSILON, budget - this.asleepRamGb());
  }

  /** RAM charged to sleeping models, by model id. */
  private readonly asleepRam = new Map<string, number>();

  /** `model` fell asleep holding `gb` of RAM (0: it holds none), or woke / stopped (null). */
  sleeping(model: string, gb: number | null): void {
    if (gb === null || gb <= 0) this.asleepRam.delete(model);
    else this.asleepRam.set(model, gb);
  }

  /** RAM held by sleeping models now. */
  asleepRamGb(): number {
    let sum = 0;
    for (const gb of this.asleepRam.values()) sum += gb;
    return sum;
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
