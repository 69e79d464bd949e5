import type { RequestKey, RequestSpec } from "./types.ts";

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
  /** Its conversation (`RequestSpec.conversation`), or null. */
  conversation: string | null;
  /**
   * `hold_policy = "cost"`: time waited behind idle holds so far (closed intervals), and since
   * when it has been waiting behind them now (null: it is not).
   */
  heldWaitMs: number;
  heldSince: number | null;
  /** Clock time at which it reaches its fairness bound while it waits behind holds; else null. */
  quantumAt: number | null;
  /**
   * While it waits behind holds whose gap was never measured: when time alone may turn the
   * cost verdict to yield (hold-cost.ts, `reviewMs`), for the wake timer; else null.
   */
  reviewAt: number | null;
  /** Its key (`RequestSpec.key`, else `anonymous`). */
  key: RequestKey;
  /**
   * While higher-priority keys' work or holds block it: the clock time its key's patience runs
   * out (design.md, "Fair share", 4), for the wake timer; else null.
   */
  turnAt: number | null;
  /** Its place in arrival order (first come, first served when fair share is turned off). */
  seq: number;
  /** Counted among its key's waiters (`FairShare.enter`, until `leave`). */
  counted: boolean;
}

/** `q`'s time waited behind idle holds, as of `now`. */
export function heldWait(q: Queued, now: number): number {
  return q.heldWaitMs + (q.heldSince === null ? 0 : now - q.heldSince);
}

export function waiter(
  spec: RequestSpec,
  now: number,
  defaults: { holdMs: number; patienceMs: number },
  anonymous: RequestKey,
  seq = 0,
): Queued {
  return {
    spec,
    arrivedAt: now,
    holdMs: spec.holdMs ?? defaults.holdMs,
    patienceMs: spec.patienceMs ?? defaults.patienceMs,
    keepAliveMs: spec.keepAliveMs,
    reported: 0,
    conversation: spec.conversation ?? null,
    heldWaitMs: 0,
    heldSince: null,
    quantumAt: null,
    reviewAt: null,
    key: spec.key ?? anonymous,
    turnAt: null,
    seq,
    counted: false,
  };
}
