/**
 * The callers waiting for a model: each `acquire` becomes a scheduler request, and the
 * scheduler's grant / fail / position / loading effects reach its caller here. Every acquire
 * ends exactly once, in a lease or an error; a lease is released to the scheduler at most once.
 * Invariants: ./design.md.
 */
import type { AcquireHooks, Lease } from "../api/gateway.ts";
import type { ModelConfig } from "../config/types.ts";
import type { RequestSpec, ServeOutcome } from "../scheduler/types.ts";
import type { Clock } from "../shared/clock.ts";
import { QmError } from "../shared/errors.ts";

/** The scheduler events a waiter causes. */
export interface WaiterEvents {
  request(spec: RequestSpec): void;
  cancel(requestId: number): void;
  serveDone(requestId: number, outcome?: ServeOutcome): void;
}

export interface WaitersDeps {
  events: WaiterEvents;
  clock: Clock;
  /** The model as configured now: a start may have moved it to a free port. */
  current(model: ModelConfig): ModelConfig;
}

interface Pending {
  model: ModelConfig;
  signal: AbortSignal;
  hooks: AcquireHooks;
  askedAt: number;
  /** Its place in the waiting line, as last reported (0: not in the line). */
  position: number;
  resolve(lease: Lease): void;
  reject(err: QmError): void;
  detach(): void;
}

export class Waiters {
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;

  constructor(private readonly deps: WaitersDeps) {}

  /**
   * Waits until the scheduler grants `model` to this caller. Rejects with the request's fate
   * (start failure, shutdown, …) or `cancelled` when `signal` aborts first.
   */
  acquire(model: ModelConfig, signal: AbortSignal, hooks: AcquireHooks = {}): Promise<Lease> {
    const id = this.nextRequestId++;
    return new Promise<Lease>((resolve, reject) => {
      if (signal.aborted) {
        reject(cancelled(model.id));
        return;
      }
      const pending: Pending = {
        model,
        signal,
        hooks,
        askedAt: this.deps.clock.now(),
        position: 0,
        resolve,
        reject,
        detach: noDetach,
      };
      this.pending.set(id, pending);
      this.deps.events.request({
        id,
        model: model.id,
        holdMs: hooks.holdMs,
        patienceMs: hooks.patienceMs,
        keepAliveMs: hooks.keepAliveMs,
        conversation: hooks.conversation,
      });
      // Most requests are granted (or refused) synchronously above; only one that has to
      // wait needs to hear about its client leaving.
      if (!this.pending.has(id)) return;
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        this.deps.events.cancel(id);
        reject(cancelled(model.id));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      pending.detach = () => signal.removeEventListener("abort", onAbort);
    });
  }

  /** `Effects.grant`: false when the caller has gone (the request is then over). */
  grant(requestId: number): boolean {
    const p = this.take(requestId);
    if (!p || p.signal.aborted) return false;
    let released = false;
    const lease: Lease = {
      model: this.deps.current(p.model),
      waitedMs: Math.round(this.deps.clock.now() - p.askedAt),
      release: (outcome) => {
        if (released) return;
        released = true;
        this.deps.events.serveDone(requestId, outcome);
      },
    };
    p.resolve(lease);
    return true;
  }

  /** `Effects.fail`. */
  fail(requestId: number, error: QmError): void {
    this.take(requestId)?.reject(error);
  }

  /** `Effects.position`: a queued request's place in line (0: it left the queue). */
  position(requestId: number, position: number): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    p.position = position;
    p.hooks.onPosition?.(position);
  }

  /** The places in the waiting line of the requests for `modelId`, front first (status). */
  positionsOf(modelId: string): number[] {
    const at: number[] = [];
    for (const p of this.pending.values()) {
      if (p.position > 0 && p.model.id === modelId) at.push(p.position);
    }
    return at.sort((a, b) => a - b);
  }

  /** `Effects.loading`: the swap this request waits for has started. */
  loading(requestId: number): void {
    this.pending.get(requestId)?.hooks.onLoading?.();
  }

  private take(requestId: number): Pending | undefined {
    const p = this.pending.get(requestId);
    if (!p) return undefined;
    this.pending.delete(requestId);
    p.detach();
    return p;
  }
}

/** A waiter granted at once never listened for its client leaving. */
function noDetach(): void {}

export function cancelled(model: string): QmError {
  return new QmError("cancelled", `the client went away while waiting for model "${model}"`);
}
