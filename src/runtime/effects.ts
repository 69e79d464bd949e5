/**
 * The scheduler's effects, carried out: grants and failures reach their callers (waiters.ts),
 * swaps and stops reach the processes (swap-runner.ts), the wake timer is armed, and the
 * metrics and `/api/events` hear what passes. A model's state change goes to every listener
 * registered with `onStateChange`, in order. Invariants: ./design.md.
 */
import { type GpuHistory, stopCause, swapCause } from "../gpu/history.ts";
import type { Metrics } from "../observe/lazy-metrics.ts";
import { type StopReason, type SwapAbortReason, stopReasonText } from "../scheduler/stop-reason.ts";
import type { Effects, HoldChange, HoldWhy, ModelState, Swap } from "../scheduler/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { QmError } from "../shared/errors.ts";
import type { EventHub } from "./event-hub.ts";
import type { SwapRunner } from "./swap-runner.ts";
import type { Waiters } from "./waiters.ts";
import type { WakeTimer } from "./wake-timer.ts";

/** Hears a model's state change (`Effects.stateChanged`). */
export type StateListener = (model: string, state: ModelState, detail?: string) => void;

export interface EffectsDeps {
  clock: Clock;
  metrics: Metrics;
  events: EventHub;
  /** The scheduler's clock time as wall-clock epoch ms (events show those). */
  toEpoch(clockMs: number): number;
  /** Where each swap and each stop outside one is kept for `/api/history`; absent: nowhere. */
  history?: GpuHistory;
}

/** What the effects drive, made once the scheduler they report to exists. */
export interface EffectParts {
  waiters: Waiters;
  runner: SwapRunner;
  wake: WakeTimer;
}

export class RuntimeEffects implements Effects {
  private readonly stateListeners: StateListener[] = [];
  // Set by `drive`, before the scheduler handles its first event.
  private waiters!: Waiters;
  private runner!: SwapRunner;
  private wake!: WakeTimer;

  constructor(private readonly deps: EffectsDeps) {}

  /** The parts the effects act on (they need the scheduler, which needs these effects). */
  drive(parts: EffectParts): void {
    this.waiters = parts.waiters;
    this.runner = parts.runner;
    this.wake = parts.wake;
  }

  /** `fn` hears every state change, after the listeners registered before it. */
  onStateChange(fn: StateListener): void {
    this.stateListeners.push(fn);
  }

  grant(requestId: number, _model: string): boolean {
    return this.waiters.grant(requestId);
  }

  fail(requestId: number, error: QmError): void {
    this.waiters.fail(requestId, error);
  }

  position(requestId: number, position: number): void {
    this.waiters.position(requestId, position);
  }

  loading(requestId: number, _model: string): void {
    if (!this.waiters.loading(requestId) || this.clientTold) return;
    this.clientTold = true;
    // A swap's announcement comes right before its `startSwap`, in the same call; one that
    // joins a swap already running has none, and the mark must not reach a later swap.
    queueMicrotask(() => {
      this.clientTold = false;
    });
  }

  /**
   * A client was just told of the load a `startSwap` is about to begin: that swap lets the
   * placeholder's bytes go out before its spawn.
   */
  private clientTold = false;

  startSwap(swap: Swap): void {
    const { metrics, clock } = this.deps;
    this.deps.history?.swap(
      Date.now(),
      swap.target,
      swap.evict,
      swapCause(swap.evict, swap.budget ?? []),
    );
    metrics.swapStarted(swap.id, swap.target, swap.evict, swap.budget ?? [], clock.now());
    this.runner.startSwap(swap, this.clientTold);
    this.clientTold = false;
  }

  abortSwap(swapId: number, reason: SwapAbortReason): void {
    this.runner.abortSwap(swapId, reason);
  }

  stopModels(models: string[], reason: StopReason): void {
    this.deps.history?.swap(Date.now(), null, models, stopCause(stopReasonText(reason)));
    this.deps.metrics.stopped(models, reason);
    this.runner.stopModels(models, reason);
  }

  sleepModels(models: string[], reason: StopReason): void {
    this.deps.history?.swap(Date.now(), null, models, stopCause(stopReasonText(reason)));
    this.deps.metrics.stopped(models, reason);
    this.runner.sleepModels(models, reason);
  }

  wakeAt(atMs: number | null): void {
    this.wake.at(atMs);
  }

  holdChanged(model: string, change: HoldChange, untilMs: number, why?: HoldWhy): void {
    this.deps.metrics.hold(model, change, why?.reason);
    this.deps.events.publish({
      type: "hold",
      model,
      hold: change,
      until_ms: this.deps.toEpoch(untilMs),
      ...(why ? { gap_ms: Math.round(why.gapMs), swap_ms: Math.round(why.swapMs) } : {}),
      ...(why?.reason ? { reason: why.reason } : {}),
    });
  }

  stateChanged(model: string, state: ModelState, detail?: string): void {
    for (const fn of this.stateListeners) fn(model, state, detail);
  }
}
