import type {
  AcquireHooks,
  Gateway,
  Lease,
  LeaseInfo,
  QmEvent,
  StatusJson,
} from "../api/gateway.ts";
import { parseVariantName } from "../config/index.ts";
import type { Config, ModelConfig } from "../config/types.ts";
import { GroupPolicy } from "../policy/group.ts";
import { MatrixPolicy } from "../policy/matrix.ts";
import type { BudgetView, EvictionPolicy } from "../policy/types.ts";
import { exitError, ModelProcess, type ProcessExit } from "../process/index.ts";
import { Scheduler } from "../scheduler/scheduler.ts";
import type { Effects, ModelState, Swap } from "../scheduler/types.ts";
import type { Clock } from "../shared/clock.ts";
import { asQmError, QmError } from "../shared/errors.ts";
import type { Logger } from "../shared/log.ts";
import { realTimers, setLongTimeout, type Timers } from "../shared/timer.ts";
import { EventHub } from "./event-hub.ts";
import { GpuWatch } from "./gpu-watch.ts";
import { LeaseBook } from "./leases.ts";
import { LiveBudget } from "./live-budget.ts";
import { StallStreaks } from "./stalls.ts";
import { buildStatus } from "./status.ts";
import { Variants } from "./variants.ts";

interface Pending {
  model: ModelConfig;
  signal: AbortSignal;
  hooks: AcquireHooks;
  askedAt: number;
  resolve(lease: Lease): void;
  reject(err: QmError): void;
  detach(): void;
}

export interface RuntimeOptions {
  clock: Clock;
  log: Logger;
  /** Replaces the real supervisor (tests). */
  makeProcess?: (model: ModelConfig, onExit: (exit: ProcessExit) => void) => ModelProcess;
}

/**
 * The composition root's heart: it owns the one scheduler, implements its effects with real
 * processes and timers, and turns HTTP callers into scheduler requests.
 */
export class Runtime implements Effects, Gateway {
  readonly scheduler: Scheduler;
  readonly events = new EventHub();
  private readonly processes = new Map<string, ModelProcess>();
  private readonly pending = new Map<number, Pending>();
  private nextRequestId = 1;
  private cancelWake: (() => void) | null = null;
  /** Real timers on the scheduler's clock, for the wake timer. */
  private readonly wakeTimers: Timers = {
    ...realTimers,
    now: () => this.opts.clock.now(),
  };
  /** Aborted when shutdown's grace runs out: requests still running are cut. */
  private readonly cut = new AbortController();
  /** Swaps whose target has not started yet, by target: a stop must keep it from starting. */
  private readonly swapping = new Map<string, { aborted: boolean }>();
  private closing = false;
  /** Memory limits in force: the static budgets, tightened by the live GPU ceiling. */
  readonly budget: LiveBudget;
  readonly leases: LeaseBook;
  readonly gpu: GpuWatch;
  private readonly variants: Variants;
  private readonly startedAt = Date.now();
  private readonly stalls = new StallStreaks();

  constructor(
    readonly config: Config,
    private readonly opts: RuntimeOptions,
  ) {
    this.budget = new LiveBudget(config.resources);
    this.leases = new LeaseBook(opts.log);
    for (const model of Object.values(config.models)) this.addProcess(model);
    this.scheduler = new Scheduler(config, makePolicy(config, this.budget), this, opts.clock);
    this.gpu = new GpuWatch({
      resources: config.resources,
      budget: this.budget,
      log: opts.log,
      clock: opts.clock,
      processes: () => this.processes.values(),
      inTransition: () => this.scheduler.snapshot().swaps.length > 0,
      shed: (gb) => this.scheduler.shed(gb),
    });
    this.budget.refusalOf = (model) => this.gpu.refusal(model);
    this.variants = new Variants(config, opts.log, (variant) => {
      this.config.models[variant.id] = variant;
      this.addProcess(variant);
      this.scheduler.addModel(variant);
    });
  }

  private addProcess(model: ModelConfig): void {
    const onExit = (exit: ProcessExit) => this.onProcessExit(model.id, exit);
    const proc = this.opts.makeProcess
      ? this.opts.makeProcess(model, onExit)
      : new ModelProcess(model, {
          healthCheckTimeoutS: this.config.server.healthCheckTimeoutS,
          log: this.opts.log,
          onExit,
          // Moved to a free port before a start: requests must follow it there.
          onConfigChange: (moved) => {
            this.config.models[moved.id] = moved;
          },
        });
    this.processes.set(model.id, proc);
  }

  /**
   * Like `resolve`, and also mints `model?ctx=N` variants on first use. Throws a QmError for
   * a malformed variant request.
   */
  async resolveModel(name: string): Promise<ModelConfig | undefined> {
    const direct = this.resolve(name);
    if (direct) return direct;
    const v = parseVariantName(name);
    if (!v) return undefined;
    const base = this.resolve(v.base);
    return base ? this.variants.get(base, v.ctx) : undefined;
  }

  /** Model id for a name a client sent (id or alias), or undefined. */
  resolve(name: string): ModelConfig | undefined {
    const id = Object.hasOwn(this.config.models, name) ? name : this.config.aliases[name];
    return id === undefined ? undefined : this.config.models[id];
  }

  process(id: string): ModelProcess | undefined {
    return this.processes.get(id);
  }

  get shuttingDown(): boolean {
    return this.closing;
  }

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
        askedAt: this.opts.clock.now(),
        resolve,
        reject,
        detach: () => {},
      };
      this.pending.set(id, pending);
      this.scheduler.request({
        id,
        model: model.id,
        holdMs: hooks.holdMs,
        patienceMs: hooks.patienceMs,
      });
      // Most requests are granted (or refused) synchronously above; only one that has to
      // wait needs to hear about its client leaving.
      if (!this.pending.has(id)) return;
      const onAbort = () => {
        if (!this.pending.delete(id)) return;
        this.scheduler.cancel(id);
        reject(cancelled(model.id));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      pending.detach = () => signal.removeEventListener("abort", onAbort);
    });
  }

  modelState(id: string): ModelState {
    return this.scheduler.state(id) ?? "stopped";
  }

  status(): StatusJson {
    // The scheduler's clock is monotonic; status shows holds as wall-clock times.
    const toEpoch = (t: number) => Math.round(Date.now() + (t - this.opts.clock.now()));
    return buildStatus({
      config: this.config,
      snap: this.scheduler.snapshot(),
      processes: this.processes,
      startedAt: this.startedAt,
      toEpoch,
      budget: this.budget,
      leasesOf: (id) => this.leases.count(id),
      gpu: this.gpu.last,
      foreignBaselineGb: this.gpu.foreignBaselineGb,
    });
  }

  /**
   * A leased model is busy by design: unloading it would only wait out the lease while every
   * new request queued behind the pending unload. Refuse (409) unless forced, which revokes
   * the leases first.
   */
  unload(id: string | null, opts: { force?: boolean } = {}): void {
    const held = this.leases.list(id);
    if (held.length > 0 && !opts.force) {
      const names = held.map((l) => `${l.lease} on "${l.model}"`).join(", ");
      throw new QmError(
        "conflict",
        `cannot unload: leased (${names}); release the lease or add ?force=true to revoke it`,
      );
    }
    for (const l of held) this.leases.revoke(l.model, l.lease);
    this.scheduler.unload(id);
  }

  async lease(model: ModelConfig, signal: AbortSignal, ttlMs: number): Promise<LeaseInfo> {
    const lease = await this.acquire(model, signal, { holdMs: 0 });
    if (signal.aborted) {
      lease.release();
      throw cancelled(model.id);
    }
    return this.leases.add(lease, ttlMs);
  }

  renewLease(model: string, lease: string, ttlMs?: number): LeaseInfo {
    return this.leases.renew(model, lease, ttlMs);
  }

  releaseLease(model: string, lease: string): void {
    this.leases.release(model, lease);
  }

  subscribe(fn: (e: QmEvent) => void): () => void {
    return this.events.subscribe(fn);
  }

  logs(id: string): string[] {
    return this.processes.get(id)?.logs() ?? [];
  }

  /** Last lines of a model's stderr, for error messages. */
  stderrTail(id: string, lines = 5): string[] {
    return this.processes.get(id)?.stderrTail(lines) ?? [];
  }

  /** An upstream call timed out. A model stuck that way is stopped; the next request starts it. */
  reportStall(id: string): void {
    const { count, restart } = this.stalls.stall(id, this.opts.clock.now());
    const limit = this.stalls.limit;
    if (!restart) {
      this.opts.log.warn(`model "${id}" timed out (${count} of ${limit} before a restart)`);
      return;
    }
    this.opts.log.warn(`model "${id}" timed out ${count} times without an answer: restarting it`);
    this.scheduler.unload(id);
  }

  reportAnswered(id: string): void {
    this.stalls.answered(id);
  }

  // ── Effects ───────────────────────────────────────────────────────────────────────────────

  grant(requestId: number, _model: string): boolean {
    const p = this.pending.get(requestId);
    if (!p) return false;
    this.pending.delete(requestId);
    p.detach();
    if (p.signal.aborted) return false;
    let released = false;
    const lease: Lease = {
      model: this.config.models[p.model.id] ?? p.model,
      waitedMs: Math.round(this.opts.clock.now() - p.askedAt),
      release: (outcome) => {
        if (released) return;
        released = true;
        this.scheduler.serveDone(requestId, outcome);
      },
    };
    p.resolve(lease);
    return true;
  }

  fail(requestId: number, error: QmError): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    this.pending.delete(requestId);
    p.detach();
    p.reject(error);
  }

  startSwap(swap: Swap): void {
    const target = this.processes.get(swap.target)!;
    const evicted = swap.evict.map((id) => this.processes.get(id)!);
    if (swap.evict.length > 0) {
      this.opts.log.info(`swap: stopping ${swap.evict.join(", ")} to start ${swap.target}`);
    } else {
      this.opts.log.info(`swap: starting ${swap.target}`);
    }
    // A stop of the target before its process exists (while evictees stop, or during the
    // spawn guard) must keep it from starting at all; a stop after that aborts the start.
    const token = { aborted: false };
    this.swapping.set(swap.target, token);
    const abortedError = () =>
      new QmError("model_unloaded", `model "${swap.target}" was stopped before it started`);
    void (async () => {
      try {
        await Promise.all(evicted.map((p) => p.stop()));
        if (token.aborted) throw abortedError();
        // The spawn guard: with what the card really has free now, can the target load?
        const verdict = await this.gpu.guard(
          swap.target,
          this.config.models[swap.target]!.estVramGb,
          { evicted: swap.evict },
        );
        if (!verdict.ok) throw new QmError("cannot_fit", verdict.message);
        if (token.aborted) throw abortedError();
        await target.start();
        this.scheduler.swapDone(swap.id, { ok: true });
      } catch (err) {
        const error = asQmError(err);
        if (error.detail) this.opts.log.warn(`model "${swap.target}": ${error.detail}`);
        this.scheduler.swapDone(swap.id, { ok: false, error });
      } finally {
        if (this.swapping.get(swap.target) === token) this.swapping.delete(swap.target);
      }
    })();
  }

  stopModels(models: string[], reason: string): void {
    this.opts.log.info(`stopping ${models.join(", ")} (${reason})`);
    for (const id of models) {
      const swap = this.swapping.get(id);
      if (swap) swap.aborted = true;
      const proc = this.processes.get(id)!;
      void proc.stop().finally(() => {
        this.gpu.noteReleased();
        this.scheduler.stopped(id);
      });
    }
  }

  position(requestId: number, position: number): void {
    this.pending.get(requestId)?.hooks.onPosition?.(position);
  }

  loading(requestId: number, _model: string): void {
    this.pending.get(requestId)?.hooks.onLoading?.();
  }

  wakeAt(atMs: number | null): void {
    this.cancelWake?.();
    this.cancelWake = null;
    if (atMs === null) return;
    // Timers may fire a fraction of a millisecond early; round up so the deadline has passed.
    const delay = Math.max(0, Math.ceil(atMs - this.opts.clock.now()));
    this.cancelWake = setLongTimeout(
      () => {
        this.cancelWake = null;
        this.scheduler.wake();
      },
      delay,
      this.wakeTimers,
    );
  }

  stateChanged(model: string, state: ModelState, detail?: string): void {
    const line = `model ${model}: ${state}${detail ? ` — ${detail}` : ""}`;
    if (state === "failed") this.opts.log.warn(line);
    else this.opts.log.info(line);
    this.events.publish({ type: "model", model, state, detail: detail ?? null });
  }

  // ── lifecycle ─────────────────────────────────────────────────────────────────────────────

  private onProcessExit(id: string, exit: ProcessExit): void {
    // Clients learn what happened, not what the model printed: its output can carry paths,
    // tokens or prompts. The supervisor has logged the tail; /api/models/{id}/logs has it all.
    this.scheduler.exited(id, exitError(id, exit));
  }

  /** Starts background work (the GPU probe). */
  start(): void {
    this.gpu.start();
  }

  /** Refuse new work; in-flight requests keep running until `stopAll`. */
  beginShutdown(): void {
    if (this.closing) return;
    this.closing = true;
    this.gpu.stop();
    this.scheduler.shutdown();
    this.cancelWake?.();
    this.cancelWake = null;
  }

  /** Fires once shutdown's grace is over: every forward still running is cut. */
  get cutSignal(): AbortSignal {
    return this.cut.signal;
  }

  /** Ends every request still running (shutdown past its deadline); clients get an error. */
  cutInflight(): void {
    this.cut.abort(
      new QmError(
        "shutting_down",
        `qm is shutting down: the request was cut after server.shutdown_timeout_s (${this.config.server.shutdownTimeoutS} s)`,
      ),
    );
  }

  inflight(): number {
    return this.scheduler.snapshot().inflight;
  }

  /** Stops every model process; resolves when all are gone. */
  async stopAll(): Promise<void> {
    this.leases.releaseAll();
    await Promise.all([...this.processes.values()].map((p) => p.stop()));
  }
}

function makePolicy(config: Config, budget: BudgetView): EvictionPolicy {
  return config.router.policy === "matrix"
    ? new MatrixPolicy(config)
    : new GroupPolicy(config, budget);
}

function cancelled(model: string): QmError {
  return new QmError("cancelled", `the client went away while waiting for model "${model}"`);
}
