import { QmError } from "../shared/errors.ts";
import type { ModelTable } from "./models.ts";
import type { StopReason, SwapAbortReason } from "./stop-reason.ts";
import type { Effects, Swap, SwapResult } from "./types.ts";
import type { Queued } from "./waiter.ts";

export interface ActiveSwap extends Swap {
  /** Requests waiting for this swap, in arrival order. */
  waiters: Queued[];
  /** Why the swap is being aborted (`Effects.abortSwap` was called), or null. */
  abortedFor: SwapAbortReason | null;
}

/** How a swap ended for its waiters: served (`error` null) or failed with `error`. */
export interface SwapEnd {
  swap: ActiveSwap;
  error: QmError | null;
}

type SwapEffects = Pick<
  Effects,
  "startSwap" | "abortSwap" | "stopModels" | "sleepModels" | "loading"
>;

/**
 * Models in transition: swaps in progress (target starting, evict set stopping) and models
 * stopped outside any swap. Plain book-keeping, touched only from scheduler events.
 */
export class SwapBook {
  private readonly swaps = new Map<number, ActiveSwap>();
  /**
   * Models being stopped (or put to sleep, `evict = "sleep"`) outside any swap: TTL, unload,
   * shedding, crash clean-up.
   */
  private readonly stopping = new Map<string, "stop" | "sleep">();
  private nextSwapId = 1;

  constructor(
    private readonly models: ModelTable,
    private readonly effects: SwapEffects,
  ) {}

  /**
   * Step 6: stop `evict`, start `target`; `first` is its first waiter. `budget`: the part of
   * `evict` stopped to fit a memory budget (for the metrics' eviction reasons).
   */
  begin(
    target: string,
    evict: string[],
    first: Queued,
    budget: readonly string[] = [],
    gpus?: readonly number[],
  ): void {
    const sleep = evict.filter((v) => this.models.get(v)?.evictMode === "sleep");
    const wake = this.models.get(target)?.state === "sleeping";
    const swap: ActiveSwap = {
      id: this.nextSwapId++,
      target,
      evict,
      budget: [...budget],
      ...(sleep.length > 0 ? { sleep } : {}),
      ...(wake ? { wake } : {}),
      waiters: [first],
      abortedFor: null,
    };
    this.swaps.set(swap.id, swap);
    for (const v of evict) {
      this.models.setState(v, "stopping", sleep.includes(v) ? "to sleep" : undefined);
    }
    this.models.setState(target, "starting", wake ? "waking" : undefined);
    this.models.get(target)!.gpus = gpus ? [...gpus] : null;
    this.models.touch(target);
    this.effects.loading(first.spec.id, target);
    this.effects.startSwap({
      id: swap.id,
      target,
      evict: [...evict],
      budget: [...budget],
      ...(sleep.length > 0 ? { sleep: [...sleep] } : {}),
      ...(wake ? { wake } : {}),
      ...(gpus ? { gpus: [...gpus] } : {}),
    });
  }

  /** Step 2: `q` waits for the swap bringing its model in. */
  join(q: Queued): void {
    this.swapFor(q.spec.model)!.waiters.push(q);
    this.effects.loading(q.spec.id, q.spec.model);
  }

  /** Abort once: the target must not come up; the swap still ends with its swapDone. */
  abort(swap: ActiveSwap, reason: SwapAbortReason): void {
    if (swap.abortedFor !== null) return;
    swap.abortedFor = reason;
    this.effects.abortSwap(swap.id, reason);
  }

  /**
   * A swap whose waiters all left is loading a model nobody wants; when something else is
   * queued behind it, stop it now rather than finish a load only to evict it.
   */
  reapAbandoned(): void {
    for (const swap of this.swaps.values()) {
      if (swap.waiters.length === 0) this.abort(swap, "abandoned");
    }
  }

  /** swapDone: settle the swap's models; undefined for a swap already forgotten. */
  finish(swapId: number, result: SwapResult): SwapEnd | undefined {
    const swap = this.swaps.get(swapId);
    if (!swap) return undefined;
    this.swaps.delete(swapId);
    const asleep = new Set(result.asleep ?? []);
    for (const v of swap.evict) this.settle(v, asleep.has(v));
    if (swap.abortedFor !== null) {
      if (result.ok) {
        // The target came up despite the abort (an effect that lost the race to readiness):
        // stop it like any other model, and report it so.
        this.models.setState(swap.target, "stopping");
        this.stopOutsideSwap([swap.target], { kind: swap.abortedFor });
      } else {
        this.models.setState(swap.target, "stopped");
      }
      const error = new QmError(
        "model_unloaded",
        `model "${swap.target}" was unloaded while it was loading`,
      );
      return { swap, error };
    }
    if (!result.ok) {
      this.models.setState(swap.target, "failed", result.error.message);
      return { swap, error: result.error };
    }
    this.models.setState(swap.target, "ready");
    return { swap, error: null };
  }

  /**
   * An evictee's stop or sleep landed: `sleeping` when it really went to sleep, else
   * `stopped`. An unload asked for while it was going to sleep stops it now.
   */
  private settle(id: string, asleep: boolean): void {
    const m = this.models.get(id);
    if (!m) return;
    const unload = m.unloadPending;
    m.unloadPending = false;
    this.models.setState(id, asleep ? "sleeping" : "stopped");
    if (asleep && unload) this.stopOutsideSwap([id], { kind: "unload" });
  }

  /**
   * Unload: idle ready models stop now, busy ones once their in-flight requests drain; a
   * loading one's swap is aborted (the swap then reports the end); a failed one is forgotten.
   * A sleeping one is stopped for real (its process ends); one going to sleep is stopped
   * once it is asleep.
   */
  unload(ids: string[]): void {
    const now: string[] = [];
    for (const id of ids) {
      const m = this.models.get(id);
      if (!m) continue;
      if (m.state === "ready") {
        if (m.inflight > 0) m.unloadPending = true;
        else now.push(id);
      } else if (m.state === "sleeping") {
        if (!this.stopping.has(id)) now.push(id);
      } else if (m.state === "stopping") {
        if (this.goingToSleep(id)) m.unloadPending = true;
      } else if (m.state === "starting") {
        const swap = this.swapFor(id);
        if (swap) this.abort(swap, "unload");
      } else if (m.state === "failed") {
        this.models.setState(id, "stopped");
      }
    }
    this.stopOutsideSwap(now, { kind: "unload" });
  }

  /** Stop idle (or sleeping) models outside any swap; each comes back as `stopped`. */
  stopOutsideSwap(models: string[], reason: StopReason): void {
    if (models.length === 0) return;
    for (const id of models) {
      this.stopping.set(id, "stop");
      const m = this.models.get(id)!;
      m.unloadPending = false;
      if (m.state === "ready" || m.state === "sleeping") this.models.setState(id, "stopping");
    }
    this.effects.stopModels(models, reason);
  }

  /**
   * Evict idle models outside any swap (TTL, keep_alive 0, memory pressure): `evict = "sleep"`
   * ones are put to sleep (each comes back as `slept`), the rest stopped.
   */
  evictOutsideSwap(models: string[], reason: StopReason): void {
    const sleep = models.filter((id) => this.models.get(id)?.evictMode === "sleep");
    this.stopOutsideSwap(
      models.filter((id) => !sleep.includes(id)),
      reason,
    );
    if (sleep.length === 0) return;
    for (const id of sleep) {
      this.stopping.set(id, "sleep");
      this.models.get(id)!.unloadPending = false;
      this.models.setState(id, "stopping", "to sleep");
    }
    this.effects.sleepModels(sleep, reason);
  }

  /** A stop asked for by `stopOutsideSwap` landed (any other report is ignored). */
  stopped(model: string): void {
    if (this.stopping.get(model) !== "stop") return;
    this.stopping.delete(model);
    const m = this.models.get(model);
    if (m && m.state === "stopping") this.models.setState(model, "stopped");
  }

  /**
   * A sleep asked for by `evictOutsideSwap` landed: asleep, or stopped when it could not
   * sleep (any other report is ignored).
   */
  slept(model: string, asleep: boolean): void {
    if (this.stopping.get(model) !== "sleep") return;
    this.stopping.delete(model);
    const m = this.models.get(model);
    if (m && m.state === "stopping") this.settle(model, asleep);
  }

  /** Going to sleep, in a swap's evict set or outside any swap. */
  private goingToSleep(id: string): boolean {
    if (this.stopping.get(id) === "sleep") return true;
    for (const s of this.swaps.values()) if (s.sleep?.includes(id)) return true;
    return false;
  }

  isStopping(model: string): boolean {
    return this.stopping.has(model);
  }

  swapFor(target: string): ActiveSwap | undefined {
    for (const s of this.swaps.values()) if (s.target === target) return s;
    return undefined;
  }

  inTransition(model: string): boolean {
    if (this.stopping.has(model)) return true;
    for (const s of this.swaps.values()) {
      if (s.target === model || s.evict.includes(model)) return true;
    }
    return false;
  }

  /** Drops a waiter whose client left; undefined when it was not waiting on any swap. */
  dropWaiter(requestId: number): Queued | undefined {
    for (const swap of this.swaps.values()) {
      const j = swap.waiters.findIndex((q) => q.spec.id === requestId);
      if (j >= 0) return swap.waiters.splice(j, 1)[0];
    }
    return undefined;
  }

  /** Takes every waiter off every swap (shutdown); the swaps themselves run on. */
  takeWaiters(): Queued[] {
    return [...this.swaps.values()].flatMap((s) => s.waiters.splice(0));
  }

  *waiters(): Iterable<Queued> {
    for (const s of this.swaps.values()) yield* s.waiters;
  }

  waiterCount(): number {
    let n = 0;
    for (const s of this.swaps.values()) n += s.waiters.length;
    return n;
  }

  snapshot() {
    return [...this.swaps.values()].map((s) => ({
      id: s.id,
      target: s.target,
      evict: [...s.evict],
      waiters: s.waiters.length,
    }));
  }
}
