import type { Config } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import { QmError } from "../shared/errors.ts";
import type { ModelTable } from "./models.ts";
import type { SwapBook } from "./swaps.ts";

/** What a reload hands the scheduler. */
export interface Reconfigure {
  config: Pick<Config, "models" | "scheduler" | "groups">;
  policy: EvictionPolicy;
  /** Models removed from the config. */
  retire: string[];
}

/**
 * Retired models that are down leave the table (their waiters fail in the drain after).
 * Returns whether any retired model is left.
 */
export function reapRetired(models: ModelTable, swaps: SwapBook): boolean {
  let left = false;
  for (const m of models.all()) {
    if (!m.retired) continue;
    const down = (m.state === "stopped" || m.state === "failed") && !swaps.inTransition(m.id);
    if (down) models.delete(m.id);
    else left = true;
  }
  return left;
}

export function notConfigured(model: string): QmError {
  return new QmError("model_not_found", `model "${model}" was removed from the config`);
}

export function shuttingDown(): QmError {
  return new QmError("shutting_down", "qm is shutting down; the request was not served");
}
