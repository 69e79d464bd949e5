/**
 * Why the scheduler stops (or puts to sleep) models outside a swap. A typed value, so that
 * whoever reads it — the log, the metrics' `reason` label — does so without parsing text.
 */
export type StopReason =
  /** Idle past its `ttl_s` (or the `keep_alive` a request set). */
  | { kind: "ttl" }
  /** A request asked for `keep_alive: 0`: gone once idle. */
  | { kind: "keep_alive" }
  /** Asked for: `unload`, a model removed by a reload, a stuck model's restart. */
  | { kind: "unload" }
  /** Its swap was aborted because every waiter left, but the target came up anyway. */
  | { kind: "abandoned" }
  /** A sleeping model's host RAM is freed for a load of `for` (the RAM budget). */
  | { kind: "ram"; for: string }
  /** Shed: the GPU's memory ran short (`Scheduler.shed`). */
  | { kind: "gpu_pressure" };

/** Why a swap in progress is aborted (`Effects.abortSwap`). */
export type SwapAbortReason = "unload" | "abandoned";

/** The reason as the log words it. */
export function stopReasonText(reason: StopReason): string {
  switch (reason.kind) {
    case "keep_alive":
      return "keep_alive 0";
    case "ram":
      return `RAM for ${reason.for}`;
    case "gpu_pressure":
      return "GPU memory pressure";
    default:
      return reason.kind;
  }
}
