import type { Card } from "./cards.ts";

/**
 * An eviction policy answers one question: to run `target`, which of the running models must
 * stop? It is pure — no logging, no mutation, no clock — because the scheduler asks it once per
 * request and again for every queued request on every drain.
 */
export type Eviction =
  | {
      ok: true;
      evict: string[];
      /** The part of `evict` stopped to fit a VRAM or RAM budget (the rest: group rules). */
      budget?: string[];
      /** Several GPUs: the card(s) the target is to run on (ascending). Absent: the box. */
      gpus?: number[];
    }
  | {
      ok: false;
      reason: string;
      /**
       * `"RAM"`: it does not fit the RAM budget. Sleeping models' RAM is taken off that budget
       * (they are not among `running`): the scheduler may stop one to make room.
       */
      pool?: "RAM";
    };

export interface EvictionPolicy {
  /**
   * @param target  the model to run (never in `running`)
   * @param running models that are starting, ready or stopping, least-recently-used first
   *                (a monotonic use counter, ties by id, never-served first)
   */
  evictionFor(target: string, running: readonly string[]): Eviction;
  /** A `?ctx=` variant was minted: it belongs wherever its base model does. */
  addVariant(variant: string, base: string): void;
}

/**
 * The memory limits in force right now, read on every decision. The runtime's live VRAM ceiling
 * (nvidia-smi) tightens `vramGb`; without a reading it is the static budget. 0 = no budget.
 */
export interface BudgetView {
  vramGb(): number;
  ramGb(): number;
  /** Why `model` may not start at all right now (a remembered spawn-guard refusal), or null. */
  refusal?(model: string): string | null;
  /**
   * Several GPUs: each card and its live ceiling, by index; empty or absent = one budget for
   * the box (`vramGb`), as on a one-card box. With cards, the policy places GPU targets.
   */
  cards?(): readonly Card[];
  /** The cards a resident runs on (the scheduler's record); undefined = not placed. */
  placement?(model: string): readonly number[] | undefined;
}

export function staticBudget(resources: { vramBudgetGb: number; ramBudgetGb: number }): BudgetView {
  return { vramGb: () => resources.vramBudgetGb, ramGb: () => resources.ramBudgetGb };
}
