/**
 * The callers waiting for a model: each `acquire` becomes a scheduler request, and the
 * scheduler's grant / fail / position / loading effects reach its caller here. Every acquire
 * ends exactly once, in a lease or an error; a lease is released to the scheduler at most once.
 *
 * Keys (`[keys.NAME]`): a request carries its key (`AcquireHooks.key`), passed on to the
 * scheduler's request event. Here, before the scheduler: a key past its `max_queued` waiting
 * requests gets 503 `queue_full`; a key at its `max_concurrency` has its next request held back
 * (first come, first served within the key) until one of its own ends — it waits, it is not
 * refused; a key a reload revoked gets 401 for every request still waiting.
 * Invariants: ./design.md.
 */
import type { AcquireHooks, Lease } from "../api/gateway.ts";
import type { WaitingJson } from "../api/status-json.ts";
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
  /** The waiting line changed: a place moved, or a request in it left (prefetch's plan). */
  onQueue?(): void;
}

interface Pending {
  model: ModelConfig;
  signal: AbortSignal;
  hooks: AcquireHooks;
  askedAt: number;
  /** Its place in the waiting line, as last reported (0: not in the line). */
  position: number;
  /** Held back by its key's `max_concurrency`: the scheduler has not heard of it yet. */
  held: boolean;
  resolve(lease: Lease): void;
  reject(err: QmError): void;
  detach(): void;
}

/** A key's requests: those the scheduler knows (waiting or granted, not yet ended), and those held back. */
interface KeyLoad {
  active: number;
  held: number[];
}

export class Waiters {
  private readonly pending = new Map<number, Pending>();
  private readonly keys = new Map<string, KeyLoad>();
  /** Granted requests by id: their key, until they end. */
  private readonly granted = new Map<number, string>();
  private nextRequestId = 1;

  constructor(private readonly deps: WaitersDeps) {}

  /**
   * Waits until the scheduler grants `model` to this caller. Rejects with the request's fate
   * (start failure, shutdown, the key's `max_queued`, its revocation, …) or `cancelled` when
   * `signal` aborts first.
   */
  acquire(model: ModelConfig, signal: AbortSignal, hooks: AcquireHooks = {}): Promise<Lease> {
    const id = this.nextRequestId++;
    return new Promise<Lease>((resolve, reject) => {
      if (signal.aborted) {
        reject(cancelled(model.id));
        return;
      }
      const key = hooks.key;
      if (key?.revoked) {
        reject(revoked(key.name));
        return;
      }
      if (key && (key.maxQueued ?? 0) > 0 && this.waitingOf(key.name) >= key.maxQueued!) {
        reject(
          new QmError(
            "queue_full",
            `key "${key.name}" already has ${key.maxQueued} requests waiting (max_queued); try again shortly`,
            { retryAfterS: 5 },
          ),
        );
        return;
      }
      const pending: Pending = {
        model,
        signal,
        hooks,
        askedAt: this.deps.clock.now(),
        position: 0,
        held: false,
        resolve,
        reject,
        detach: noDetach,
      };
      this.pending.set(id, pending);
      const load = key ? this.loadOf(key.name) : null;
      if (load && key!.maxConcurrency > 0 && load.active >= key!.maxConcurrency) {
        pending.held = true;
        load.held.push(id);
      } else this.submit(id, pending);
      // Most requests are granted (or refused) synchronously above; only one that has to
      // wait needs to hear about its client leaving.
      if (!this.pending.has(id)) return;
      const onAbort = () => {
        const p = this.pending.get(id);
        if (!p) return;
        this.pending.delete(id);
        if (p.held) this.unhold(id, p);
        else {
          this.deps.events.cancel(id);
          this.ended(p);
        }
        if (p.position > 0) this.deps.onQueue?.();
        reject(cancelled(model.id));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      pending.detach = () => signal.removeEventListener("abort", onAbort);
    });
  }

  /** `Effects.grant`: false when the caller has gone (the request is then over). */
  grant(requestId: number): boolean {
    const p = this.take(requestId);
    if (!p) return false;
    if (p.signal.aborted) {
      this.ended(p);
      return false;
    }
    let released = false;
    const name = p.hooks.key?.name;
    if (name !== undefined) this.granted.set(requestId, name);
    const lease: Lease = {
      model: this.deps.current(p.model),
      waitedMs: Math.round(this.deps.clock.now() - p.askedAt),
      release: (outcome) => {
        if (released) return;
        released = true;
        this.granted.delete(requestId);
        this.deps.events.serveDone(requestId, outcome);
        this.ended(p);
      },
    };
    p.resolve(lease);
    return true;
  }

  /** `Effects.fail`. */
  fail(requestId: number, error: QmError): void {
    const p = this.take(requestId);
    if (!p) return;
    this.ended(p);
    p.reject(error);
  }

  /** `Effects.position`: a queued request's place in line (0: it left the queue). */
  position(requestId: number, position: number): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    p.position = position;
    p.hooks.onPosition?.(position);
    this.deps.onQueue?.();
  }

  /** The places in the waiting line of the requests for `modelId`, front first (status). */
  positionsOf(modelId: string): number[] {
    const at: number[] = [];
    for (const p of this.pending.values()) {
      if (p.position > 0 && p.model.id === modelId) at.push(p.position);
    }
    return at.sort((a, b) => a - b);
  }

  /** The model of each request in the waiting line, front first (prefetch's plan). */
  queuedModels(): string[] {
    const queued = [...this.pending.values()].filter((p) => p.position > 0);
    return queued.sort((a, b) => a.position - b.position).map((p) => p.model.id);
  }

  /**
   * `Effects.loading`: the swap this request waits for has started. True when that was said
   * to a client (a cold stream's placeholder), which then has bytes to send.
   */
  loading(requestId: number): boolean {
    const told = this.pending.get(requestId)?.hooks.onLoading;
    told?.();
    return told !== undefined;
  }

  /**
   * Every request still waiting whose key a reload revoked gets 401 (those already granted
   * finish). Returns how many.
   */
  dropRevoked(): number {
    let n = 0;
    for (const [id, p] of [...this.pending]) {
      const key = p.hooks.key;
      if (!key?.revoked) continue;
      this.pending.delete(id);
      p.detach();
      if (p.held) this.unhold(id, p);
      else {
        this.deps.events.cancel(id);
        this.ended(p);
      }
      p.reject(revoked(key.name));
      n++;
    }
    return n;
  }

  /** Who waits for what (`/api/status` `waiting`), oldest first. */
  waiting(): WaitingJson[] {
    const now = this.deps.clock.now();
    return [...this.pending.values()]
      .sort((a, b) => a.askedAt - b.askedAt)
      .map((p) => ({
        key: p.hooks.key?.name ?? "anonymous",
        model: p.model.id,
        waited_ms: Math.max(0, Math.round(now - p.askedAt)),
        position: p.position > 0 ? p.position : null,
      }));
  }

  /** Requests of key `name` in flight now (granted, not yet released). */
  inflightOf(name: string): number {
    let n = 0;
    for (const k of this.granted.values()) if (k === name) n++;
    return n;
  }

  /** Requests of key `name` waiting (held back, or waiting in the scheduler). */
  waitingOf(name: string): number {
    let n = 0;
    for (const p of this.pending.values()) if (p.hooks.key?.name === name) n++;
    return n;
  }

  /** Hands the request to the scheduler (it may be granted or refused synchronously). */
  private submit(id: number, p: Pending): void {
    p.held = false;
    const key = p.hooks.key;
    if (key) this.loadOf(key.name).active++;
    this.deps.events.request({
      id,
      model: p.model.id,
      holdMs: p.hooks.holdMs,
      patienceMs: p.hooks.patienceMs,
      keepAliveMs: p.hooks.keepAliveMs,
      conversation: p.hooks.conversation,
      toolResult: p.hooks.toolResult,
      ...(key
        ? { key: { name: key.name, priority: key.priority, maxConcurrency: key.maxConcurrency } }
        : {}),
    });
  }

  /** A request the scheduler knew of is over: its key may hand the next held one on. */
  private ended(p: Pending): void {
    const key = p.hooks.key;
    if (!key) return;
    const load = this.keys.get(key.name);
    if (!load) return;
    load.active = Math.max(0, load.active - 1);
    while (load.held.length > 0 && (key.maxConcurrency <= 0 || load.active < key.maxConcurrency)) {
      const next = load.held.shift()!;
      const q = this.pending.get(next);
      if (q?.held) this.submit(next, q);
    }
    if (load.active === 0 && load.held.length === 0) this.keys.delete(key.name);
  }

  private unhold(id: number, p: Pending): void {
    const name = p.hooks.key?.name;
    const load = name === undefined ? undefined : this.keys.get(name);
    if (!load) return;
    const at = load.held.indexOf(id);
    if (at >= 0) load.held.splice(at, 1);
    if (load.active === 0 && load.held.length === 0) this.keys.delete(name!);
  }

  private loadOf(name: string): KeyLoad {
    let load = this.keys.get(name);
    if (!load) {
      load = { active: 0, held: [] };
      this.keys.set(name, load);
    }
    return load;
  }

  private take(requestId: number): Pending | undefined {
    const p = this.pending.get(requestId);
    if (!p) return undefined;
    this.pending.delete(requestId);
    p.detach();
    if (p.position > 0) this.deps.onQueue?.();
    return p;
  }
}

/** A waiter granted at once never listened for its client leaving. */
function noDetach(): void {}

export function cancelled(model: string): QmError {
  return new QmError("cancelled", `the client went away while waiting for model "${model}"`);
}

function revoked(name: string): QmError {
  return new QmError(
    "unauthorized",
    `the key "${name}" was revoked by a config reload while this request waited`,
  );
}
