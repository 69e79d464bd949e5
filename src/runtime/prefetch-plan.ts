/**
 * Which models come next, for prefetch (pure): the targets of swaps not spawned yet, the
 * models of the requests in the waiting line, the next preload — each with the files to read,
 * none of them a file a running model uses. Invariants: ./design.md "Prefetch".
 */
import type { ModelConfig } from "../config/types.ts";
import type { ModelState } from "../scheduler/types.ts";
import type { PlannedModel } from "./prefetch.ts";

export interface PlanInputs {
  models: Readonly<Record<string, ModelConfig>>;
  /** Targets of swaps in progress whose process is not spawned yet, oldest swap first. */
  waitingTargets: readonly string[];
  /** The model of each request in the waiting line, front first. */
  queued: readonly string[];
  /** The preload that comes after the one loading now, or null. */
  nextPreload: string | null;
  state(model: string): ModelState | undefined;
  /** A model's GGUF files (`weightFiles`). */
  files(model: ModelConfig): readonly string[];
}

export function prefetchPlan(inputs: PlanInputs): PlannedModel[] {
  const { models, waitingTargets, state, files } = inputs;
  const waiting = new Set(waitingTargets);
  /** Its process is up: it runs, stops, sleeps, or a swap spawned it. */
  const up = (id: string) => {
    const s = state(id);
    return (
      s === "ready" ||
      s === "stopping" ||
      s === "sleeping" ||
      (s === "starting" && !waiting.has(id))
    );
  };
  const inUse = new Set<string>();
  for (const id of Object.keys(models)) {
    if (up(id)) for (const f of files(models[id]!)) inUse.add(f);
  }
  const order = [...waitingTargets, ...inputs.queued];
  if (inputs.nextPreload !== null) order.push(inputs.nextPreload);
  const seen = new Set<string>();
  const plan: PlannedModel[] = [];
  for (const id of order) {
    if (seen.has(id)) continue;
    seen.add(id);
    const m = models[id];
    if (!m?.prefetch || up(id)) continue;
    const mine = files(m).filter((f) => !inUse.has(f));
    if (mine.length > 0) plan.push({ model: id, files: mine });
  }
  return plan;
}
