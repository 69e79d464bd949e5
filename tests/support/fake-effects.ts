import { type StopReason, stopReasonText } from "../../src/scheduler/stop-reason.ts";
import type { Effects, HoldChange, HoldWhy, ModelState, Swap } from "../../src/scheduler/types.ts";
import type { QmError } from "../../src/shared/errors.ts";

/** Records every effect the scheduler asks for, in order; decides grant delivery per request. */
export class FakeEffects implements Effects {
  readonly log: string[] = [];
  readonly granted: number[] = [];
  readonly failed = new Map<number, QmError>();
  readonly swaps: Swap[] = [];
  /** Models asked to stop: each `stopModels` call, and the target of each `abortSwap`. */
  readonly stops: string[][] = [];
  /** Models asked to sleep: each `sleepModels` call. */
  readonly sleeps: string[][] = [];
  /** Every `abortSwap`, in order. */
  readonly aborts: { swapId: number; reason: string }[] = [];
  readonly positions = new Map<number, number[]>();
  readonly states: string[] = [];
  /** Every `holdChanged`, as `model:change@until`. */
  readonly holds: string[] = [];
  /** The figures of each `holdChanged` that carried them (cost policy), as `model:change gap=… swap=… reason`. */
  readonly holdWhys: string[] = [];
  wake: number | null = null;
  /** Every wakeAt call, in order. */
  readonly wakes: (number | null)[] = [];
  /** Requests whose callers are gone: grant() returns false for them. */
  readonly gone = new Set<number>();

  grant(requestId: number, model: string): boolean {
    if (this.gone.has(requestId)) {
      this.log.push(`grant-undelivered ${requestId} ${model}`);
      return false;
    }
    this.granted.push(requestId);
    this.log.push(`grant ${requestId} ${model}`);
    return true;
  }
  fail(requestId: number, error: QmError): void {
    this.failed.set(requestId, error);
    this.log.push(`fail ${requestId} ${error.code}`);
  }
  startSwap(swap: Swap): void {
    this.swaps.push(swap);
    const sleep = swap.sleep?.length ? ` sleep=[${swap.sleep.join(",")}]` : "";
    this.log.push(
      `swap ${swap.id} ${swap.target} evict=[${swap.evict.join(",")}]${sleep}${swap.wake ? " wake" : ""}`,
    );
  }
  abortSwap(swapId: number, reason: string): void {
    const target = this.swaps.find((s) => s.id === swapId)?.target ?? "?";
    this.aborts.push({ swapId, reason });
    this.stops.push([target]);
    this.log.push(`abort ${swapId} ${target} ${reason}`);
  }
  stopModels(models: string[], reason: StopReason): void {
    this.stops.push(models);
    this.log.push(`stop [${models.join(",")}] ${stopReasonText(reason)}`);
  }
  sleepModels(models: string[], reason: StopReason): void {
    this.sleeps.push(models);
    this.log.push(`sleep [${models.join(",")}] ${stopReasonText(reason)}`);
  }
  position(requestId: number, position: number): void {
    const list = this.positions.get(requestId) ?? [];
    list.push(position);
    this.positions.set(requestId, list);
  }
  loading(requestId: number, model: string): void {
    this.log.push(`loading ${requestId} ${model}`);
  }
  wakeAt(atMs: number | null): void {
    this.wake = atMs;
    this.wakes.push(atMs);
  }
  holdChanged(model: string, change: HoldChange, untilMs: number, why?: HoldWhy): void {
    this.holds.push(`${model}:${change}@${untilMs}`);
    if (why) {
      this.holdWhys.push(
        `${model}:${change} gap=${why.gapMs} swap=${why.swapMs} ${why.reason ?? ""}`,
      );
    }
  }
  stateChanged(model: string, state: ModelState): void {
    this.states.push(`${model}:${state}`);
  }

  lastSwap(): Swap {
    const s = this.swaps.at(-1);
    if (!s) throw new Error("no swap started");
    return s;
  }
}
