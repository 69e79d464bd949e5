import type { RequestSpec } from "./types.ts";

/** A request not granted yet: queued, or waiting on the swap that brings its model in. */
export interface Queued {
  spec: RequestSpec;
  arrivedAt: number;
  /** Idle-grace hold it earns once it drains (`X-QM-Hold-Ms`, default `hold_ms`). */
  holdMs: number;
  /** How long it honours other models' holds (`X-QM-Patience-Ms`, default `patience_ms`). */
  patienceMs: number;
  /** The idle time-to-live it sets once it finishes (`keep_alive`), if it asks for one. */
  keepAliveMs: number | undefined;
  /** Last position reported through `Effects.position` (0 = none yet). */
  reported: number;
}

export function waiter(
  spec: RequestSpec,
  now: number,
  defaults: { holdMs: number; patienceMs: number },
): Queued {
  return {
    spec,
    arrivedAt: now,
    holdMs: spec.holdMs ?? defaults.holdMs,
    patienceMs: spec.patienceMs ?? defaults.patienceMs,
    keepAliveMs: spec.keepAliveMs,
    reported: 0,
  };
}
