/**
 * The live VRAM ceiling (src/gpu/design.md, "Formulas"):
 *
 *   ceiling = budget − max(0, foreign − baseline) − reserve,  never below 0
 *
 * Only foreign *growth over the idle baseline* shrinks the budget: a card full of qm's own
 * models reads as healthy, while a game claiming 8 GB shrinks admission to the headroom
 * that really exists, instead of evicting residents for room that isn't there.
 * No trustworthy reading → the static budget stands, untouched.
 */
import type { ProbeResult } from "./types.ts";

export interface CeilingInput {
  budgetGb: number;
  foreignGb: number;
  baselineGb: number;
  reserveGb: number;
}

export function liveCeiling({ budgetGb, foreignGb, baselineGb, reserveGb }: CeilingInput): number {
  const excess = Math.max(0, foreignGb - baselineGb);
  return Math.max(0, budgetGb - excess - reserveGb);
}

/**
 * The budget admission should use now: the static `vram_budget_gb` when there is no
 * budget (0) or no trusted reading, else the live ceiling. A baseline not yet learned
 * counts as 0, so every foreign byte is treated as growth — the safe side.
 */
export function effectiveBudgetGb(
  budgetGb: number,
  reserveGb: number,
  probe: ProbeResult,
  baselineGb: number | null,
): number {
  if (budgetGb <= 0 || !probe.ok) return budgetGb;
  return liveCeiling({
    budgetGb,
    foreignGb: probe.reading.foreignGb,
    baselineGb: baselineGb ?? 0,
    reserveGb,
  });
}

/**
 * Learns the idle foreign baseline: what the desktop, the driver and other steady users
 * hold while qm has nothing on the GPU.
 *
 * Rule: only readings taken while qm has no model resident (and no process of its own
 * alive) count. Within one idle stretch the baseline is the minimum foreign seen — a
 * model still releasing memory, or a transient spike, only ever raises a single reading.
 * The first idle reading after a busy stretch starts a new stretch and replaces the old
 * baseline, so a baseline that grew for good (a browser now holding 1 GB) is re-learned
 * the next time qm is idle. Busy readings never change it: there foreign depends on
 * attribution, which is exactly what the baseline must not absorb.
 */
export class ForeignBaseline {
  #gb: number | null = null;
  #inIdleStretch = false;

  /** Feed every trusted reading; `qmIdle` = no model of qm resident. */
  observe(foreignGb: number, qmIdle: boolean): void {
    if (!qmIdle) {
      this.#inIdleStretch = false;
      return;
    }
    if (!Number.isFinite(foreignGb) || foreignGb < 0) return;
    if (!this.#inIdleStretch || this.#gb === null) {
      this.#gb = foreignGb;
      this.#inIdleStretch = true;
      return;
    }
    this.#gb = Math.min(this.#gb, foreignGb);
  }

  /** The learned baseline in GB, or null before any idle reading. */
  get gb(): number | null {
    return this.#gb;
  }
}
