import type { ResourcesConfig } from "../config/types.ts";
import type { CardLimit, WatchedBudget } from "../gpu/gpu-watch.ts";
import type { Card } from "../policy/cards.ts";
import type { BudgetView } from "../policy/types.ts";

/**
 * The memory limits the policy admits against. Read on every decision (a plain field read);
 * written by the GPU probe loop. Without a trustworthy reading the static budget stands.
 * Several GPUs (`resources.gpus`, or two or more cards detected): one limit per card, and the
 * box's VRAM limit is their sum.
 */
export class LiveBudget implements BudgetView, WatchedBudget {
  /** What admission uses now: `effectiveBudgetGb` of the latest reading (0 = no budget). */
  private vram: number;
  /** Why the VRAM limit is what it is, for `qm status`. */
  note = "no GPU reading yet: the static budget applies";
  private limits: CardLimit[];
  private cardList: Card[];

  constructor(private readonly resources: ResourcesConfig) {
    this.limits = (resources.gpus ?? []).map((g) => ({
      index: g.index,
      budgetGb: g.vramBudgetGb,
      ceilingGb: g.vramBudgetGb,
    }));
    this.cardList = this.limits.map(({ index, ceilingGb }) => ({ index, ceilingGb }));
    this.vram = this.limits.length > 0 ? sum(this.limits) : resources.vramBudgetGb;
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

  /** Set by the runtime: where the scheduler placed each resident. */
  placementOf: (model: string) => readonly number[] | undefined = () => undefined;

  placement(model: string): readonly number[] | undefined {
    return this.placementOf(model);
  }

  cards(): readonly Card[] {
    return this.cardList;
  }

  /** Each card's budget and ceiling now (empty: one budget for the box). */
  cardLimits(): readonly CardLimit[] {
    return this.limits;
  }

  set(vramGb: number, note: string): void {
    this.vram = vramGb;
    this.note = note;
  }

  /** Several GPUs: the cards' limits now; the box's VRAM limit becomes their sum. */
  setCards(limits: CardLimit[], note: string): void {
    this.limits = limits;
    this.cardList = limits.map(({ index, ceilingGb }) => ({ index, ceilingGb }));
    this.set(limits.length > 0 ? sum(limits) : this.resources.vramBudgetGb, note);
  }
}

function sum(limits: readonly CardLimit[]): number {
  return limits.reduce((s, c) => s + c.ceilingGb, 0);
}
