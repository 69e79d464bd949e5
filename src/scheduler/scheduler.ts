import type { Config, ModelConfig } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import type { Clock } from "../shared/clock.ts";
import { QmError } from "../shared/errors.ts";
import { ModelTable } from "./models.ts";
import { shedVictims } from "./shed.ts";
import type { Effects, ModelState, RequestSpec, ServeOutcome, Swap, SwapResult } from "./types.ts";

interface Queued {
  spec: RequestSpec;
  arrivedAt: number;
  holdMs: number;
  patienceMs: number;
  /** Last position reported through `Effects.position` (0 = none yet). */
  reported: number;
}

interface ActiveSwap extends Swap {
  /** Requests waiting for this swap, in arrival order. */
  waiters: Queued[];
  /** Why the swap is being aborted (`Effects.abortSwap` was called), or null. */
  abortedFor: string | null;
}

interface Grant {
  model: string;
  holdMs: number;
  /** The model's generation at grant time: a crash starts a new one. */
  generation: number;
}

/**
 * The one scheduler of a qm process. Every decision is an event handled synchronously; it never
 * awaits, never does I/O, never throws to report a request's fate. See design.md beside it.
 */
export class Scheduler {
  private readonly models: ModelTable;
  private readonly queue: Queued[] = [];
  private readonly swaps = new Map<number, ActiveSwap>();
  /** Models being stopped outside any swap (TTL, unload, crash clean-up). */
  private readonly stopping = new Set<string>();
  private readonly grants = new Map<number, Grant>();
  private nextSwapId = 1;
  private closed = false;
  private armedWake: number | null = null;
  /** Events raised while one is handled (from an effect), waiting their turn. */
  private readonly pending: (() => void)[] = [];
  private running = false;
  /** Whether any model is marked draining (so the marks need clearing). */
  private anyDraining = false;

  private readonly config: Pick<Config, "models" | "groups">;
  private readonly holdMs: number;
  private readonly patienceMs: number;
  private readonly holdOnEveryRequest: boolean;
  private readonly maxQueue: number;

  constructor(
    config: Pick<Config, "models" | "scheduler" | "groups">,
    private readonly policy: EvictionPolicy,
    private readonly effects: Effects,
    private readonly clock: Clock,
  ) {
    this.holdMs = config.scheduler.holdMs;
    this.patienceMs = config.scheduler.patienceMs;
    this.holdOnEveryRequest = config.scheduler.holdOn === "request";
    this.maxQueue = config.scheduler.maxQueue;
    this.config = config;
    this.models = new ModelTable(config, clock, (id, state, detail) =>
      this.effects.stateChanged(id, state, detail),
    );
  }

  // ── events ────────────────────────────────────────────────────────────────────────────────

  request(spec: RequestSpec): void {
    this.run(() => this.onRequest(spec));
  }
  swapDone(swapId: number, result: SwapResult): void {
    this.run(() => this.onSwapDone(swapId, result));
  }
  serveDone(requestId: number, outcome: ServeOutcome = { toolCalls: false }): void {
    this.run(() => this.onServeDone(requestId, outcome));
  }
  /** The caller of a request that was not granted yet went away. */
  cancel(requestId: number): void {
    this.run(() => this.onCancel(requestId));
  }
  /** A model asked to stop through `Effects.stopModels` is gone. */
  stopped(model: string): void {
    this.run(() => this.onStopped(model));
  }
  /** A ready model's process exited without being asked to. */
  exited(model: string, error: QmError): void {
    this.run(() => this.onExited(model, error));
  }
  /** Unload one model (null = all): at once when idle, after its in-flight requests otherwise. */
  unload(model: string | null): void {
    this.run(() => this.onUnload(model));
  }
  wake(): void {
    this.run(() => this.onWake());
  }
  /**
   * The live VRAM ceiling dropped below what the residents are estimated to use (another
   * program took GPU memory): stop idle models, least-recently-used first, until they fit.
   */
  shed(vramLimitGb: number): void {
    this.run(() => this.onShed(vramLimitGb));
  }
  /** A `?ctx=` variant was minted: schedule it like any configured model. */
  addModel(model: ModelConfig): void {
    this.models.add(model);
    if (model.variantOf) this.policy.addVariant(model.id, model.variantOf.base);
  }

  /** Refuse new work and fail everything not yet granted. */
  shutdown(): void {
    this.run(() => this.onShutdown());
  }

  // ── read-only views (for status pages; never used to gate a decision from outside) ───────

  state(model: string): ModelState | undefined {
    return this.models.get(model)?.state;
  }

  snapshot() {
    const queuedFor = new Map<string, number>();
    for (const q of this.allWaiting()) {
      queuedFor.set(q.spec.model, (queuedFor.get(q.spec.model) ?? 0) + 1);
    }
    return {
      models: this.models.all().map((m) => ({
        id: m.id,
        state: m.state,
        inflight: m.inflight,
        queued: queuedFor.get(m.id) ?? 0,
        lastError: m.lastError,
        unloadPending: m.unloadPending,
        heldUntil: m.heldUntil > this.clock.now() ? m.heldUntil : null,
      })),
      queueDepth: this.queue.length,
      swaps: [...this.swaps.values()].map((s) => ({
        id: s.id,
        target: s.target,
        evict: [...s.evict],
        waiters: s.waiters.length,
      })),
      inflight: this.grants.size,
    };
  }

  // ── the run loop ──────────────────────────────────────────────────────────────────────────

  /**
   * Handles one event, then re-drains the queue and re-arms the wake timer. An event raised
   * while another is handled (an effect calling back) waits until that one is over, in order.
   */
  private run(handler: () => void): void {
    this.pending.push(handler);
    if (this.running) return;
    this.running = true;
    try {
      for (let h = this.pending.shift(); h; h = this.pending.shift()) {
        h();
        if (!this.closed) this.drain();
        this.rearm();
      }
    } finally {
      this.running = false;
    }
  }

  private onWake(): void {
    // The timer that brought us here is spent, even if it fired a little early.
    this.armedWake = null;
    // TTL deadlines pass only with time, and every one has the wake timer armed for it.
    if (!this.closed) this.expireIdle();
  }

  private onRequest(spec: RequestSpec): void {
    if (this.closed) {
      this.effects.fail(spec.id, shuttingDown());
      return;
    }
    if (!this.models.get(spec.model)) {
      // Step 1. The edge resolves aliases and answers unknown names itself; this is the guard.
      this.effects.fail(spec.id, new QmError("model_not_found", `model "${spec.model}" not found`));
      return;
    }
    // The waiting line is bounded: past `max_queue`, only a request that is served at once
    // gets in; the rest are told to come back (503 + Retry-After) rather than pile up.
    if (this.waitingCount() >= this.maxQueue && !this.servableNow(spec.model)) {
      this.effects.fail(
        spec.id,
        new QmError(
          "queue_full",
          `${this.maxQueue} requests are already waiting (scheduler.max_queue); try again shortly`,
          { retryAfterS: 5 },
        ),
      );
      return;
    }
    const q: Queued = {
      spec,
      arrivedAt: this.clock.now(),
      holdMs: spec.holdMs ?? this.holdMs,
      patienceMs: spec.patienceMs ?? this.patienceMs,
      reported: 0,
    };
    if (!this.tryProceed(q)) this.queue.push(q);
  }

  /**
   * Steps 2–6 of the decision tree for one request. Returns true when the request left the
   * waiting line (granted, joined or started a swap, or failed), false when it must queue.
   */
  private tryProceed(q: Queued): boolean {
    const id = q.spec.model;
    const m = this.models.get(id)!;
    // 2. already being swapped in → join its waiters.
    const joining = this.swapFor(id);
    if (joining && joining.abortedFor !== null) return false; // wait for the abort, then start afresh
    if (joining) {
      joining.waiters.push(q);
      this.effects.loading(q.spec.id, id);
      return true;
    }
    // 3. ready → serve now, unless at its concurrency limit (then wait, never 429).
    if (m.state === "ready") {
      if (m.unloadPending || m.draining || this.stopping.has(id)) return false;
      if (!this.models.hasSlot(id)) return false;
      this.deliver(q);
      return true;
    }
    if (m.state === "stopping") return false;
    const plan = this.policy.evictionFor(id, this.models.runningLru());
    if (!plan.ok) {
      this.effects.fail(q.spec.id, new QmError("cannot_fit", plan.reason));
      return true;
    }
    // 4. the swap collides with one in flight (or a stop in progress) → queue.
    if (plan.evict.some((v) => this.inTransition(v))) return false;
    // 5. it would evict a model that is still busy → queue.
    if (plan.evict.some((v) => this.models.get(v)!.inflight > 0)) return false;
    // 5b. it would evict a model under an idle-grace hold → queue, until this waiter's
    //     patience runs out; then it preempts (and becomes the incumbent itself).
    const now = this.clock.now();
    if (!this.patienceSpent(q, now) && plan.evict.some((v) => this.models.held(v, now))) {
      return false;
    }
    // 6. start the swap.
    const swap: ActiveSwap = {
      id: this.nextSwapId++,
      target: id,
      evict: plan.evict,
      waiters: [q],
      abortedFor: null,
    };
    this.swaps.set(swap.id, swap);
    for (const v of plan.evict) this.models.setState(v, "stopping");
    this.models.setState(id, "starting");
    this.models.touch(id);
    this.effects.loading(q.spec.id, id);
    this.effects.startSwap({ id: swap.id, target: swap.target, evict: [...swap.evict] });
    return true;
  }

  /** Step 3 would grant at once: ready, a free slot, nothing stopping or draining it. */
  private servableNow(id: string): boolean {
    const m = this.models.get(id)!;
    if (m.state !== "ready" || this.swapFor(id)) return false;
    if (m.unloadPending || m.draining || this.stopping.has(id)) return false;
    return this.models.hasSlot(id);
  }

  /** Requests queued or waiting on a swap. */
  private waitingCount(): number {
    let n = this.queue.length;
    for (const s of this.swaps.values()) n += s.waiters.length;
    return n;
  }

  private deliver(q: Queued): void {
    const id = q.spec.model;
    if (!this.effects.grant(q.spec.id, id)) return; // caller left: not in flight, nothing to undo
    this.grants.set(q.spec.id, {
      model: id,
      holdMs: q.holdMs,
      generation: this.models.get(id)!.generation,
    });
    this.models.touch(id);
    this.models.adjustInflight(id, +1);
  }

  private onSwapDone(swapId: number, result: SwapResult): void {
    const swap = this.swaps.get(swapId);
    if (!swap) return;
    this.swaps.delete(swapId);
    for (const v of swap.evict) this.models.setState(v, "stopped");
    if (swap.abortedFor !== null) {
      if (result.ok) {
        // The target came up despite the abort (an effect that lost the race to readiness):
        // stop it like any other model, and report it so.
        this.models.setState(swap.target, "stopping");
        this.stopOutsideSwap([swap.target], swap.abortedFor);
      } else {
        this.models.setState(swap.target, "stopped");
      }
      const err = new QmError(
        "model_unloaded",
        `model "${swap.target}" was unloaded while it was loading`,
      );
      for (const w of swap.waiters) this.effects.fail(w.spec.id, err);
      return;
    }
    if (!result.ok) {
      this.models.setState(swap.target, "failed", result.error.message);
      for (const w of swap.waiters) this.effects.fail(w.spec.id, result.error);
      return;
    }
    this.models.setState(swap.target, "ready");
    // Waiters beyond the concurrency limit go back to the head of the line, in order.
    const overflow: Queued[] = [];
    for (const w of swap.waiters) {
      if (this.models.hasSlot(swap.target)) this.deliver(w);
      else overflow.push(w);
    }
    this.queue.unshift(...overflow);
  }

  private onServeDone(requestId: number, outcome: ServeOutcome): void {
    const g = this.grants.get(requestId);
    if (!g) return;
    this.grants.delete(requestId);
    const m = this.models.get(g.model);
    if (!m || m.generation !== g.generation) return; // the process it ran on is gone
    // Only a response that can be followed by another round earns a hold (hold_on), and the
    // window is the one its own request asked for.
    if (this.holdOnEveryRequest || outcome.toolCalls) {
      m.holdCandidateMs = Math.max(m.holdCandidateMs, g.holdMs);
    }
    this.models.adjustInflight(g.model, -1);
    if (m.inflight > 0) return;
    if (m.unloadPending) {
      this.stopOutsideSwap([g.model], "unload");
    } else if (m.holdCandidateMs > 0) {
      m.heldUntil = this.clock.now() + m.holdCandidateMs;
    }
    m.holdCandidateMs = 0;
  }

  private onCancel(requestId: number): void {
    const i = this.queue.findIndex((q) => q.spec.id === requestId);
    if (i >= 0) {
      this.queue.splice(i, 1);
      return;
    }
    for (const swap of this.swaps.values()) {
      const j = swap.waiters.findIndex((q) => q.spec.id === requestId);
      if (j >= 0) {
        swap.waiters.splice(j, 1);
        return;
      }
    }
    // Already granted: the edge reports the end with serveDone, so a cancel here is a no-op.
  }

  /** A stop asked for by `stopOutsideSwap` landed (any other report is ignored). */
  private onStopped(model: string): void {
    if (!this.stopping.delete(model)) return;
    const m = this.models.get(model);
    if (m && m.state === "stopping") this.models.setState(model, "stopped");
  }

  private onExited(model: string, error: QmError): void {
    const m = this.models.get(model);
    if (!m || m.state !== "ready") return; // exits during a swap come back as swapDone
    this.models.crashed(model, error.message);
  }

  private onUnload(model: string | null): void {
    const targets = model === null ? this.models.all().map((m) => m.id) : [model];
    const now: string[] = [];
    for (const id of targets) {
      const m = this.models.get(id);
      if (!m) continue;
      if (m.state === "ready") {
        if (m.inflight > 0) m.unloadPending = true;
        else now.push(id);
      } else if (m.state === "starting") {
        // Unloading a loading model aborts its swap; the swap then reports the end.
        const swap = this.swapFor(id);
        if (swap) this.abortSwap(swap, "unload");
      } else if (m.state === "failed") {
        this.models.setState(id, "stopped");
      }
    }
    this.stopOutsideSwap(now, "unload");
  }

  private onShed(limitGb: number): void {
    const { groups, models: cfg } = this.config;
    const now = this.clock.now();
    const victims = shedVictims({
      residents: this.models
        .runningLru()
        .filter((id) => groups[cfg[id]!.group]?.pool !== "ram" && !this.stopping.has(id)),
      limitGb,
      estimate: (id) => cfg[id]!.estVramGb,
      sheddable: (id) => {
        const m = this.models.get(id)!;
        return (
          m.state === "ready" &&
          m.inflight === 0 &&
          !this.inTransition(id) &&
          !groups[cfg[id]!.group]?.persistent
        );
      },
      held: (id) => this.models.held(id, now),
    });
    this.stopOutsideSwap(victims, "GPU memory pressure");
  }

  private onShutdown(): void {
    this.closed = true;
    const err = shuttingDown();
    for (const q of this.queue.splice(0)) this.effects.fail(q.spec.id, err);
    for (const swap of this.swaps.values()) {
      for (const w of swap.waiters.splice(0)) this.effects.fail(w.spec.id, err);
    }
  }

  // ── helpers ───────────────────────────────────────────────────────────────────────────────

  /** Re-run the decision tree for every queued request, oldest first. */
  private drain(): void {
    this.markDraining();
    for (let i = 0; i < this.queue.length; ) {
      const q = this.queue[i]!;
      if (this.tryProceed(q)) {
        this.queue.splice(i, 1);
        if (q.reported > 0) this.effects.position(q.spec.id, 0);
      } else {
        i++;
      }
    }
    this.queue.forEach((q, i) => {
      if (q.reported !== i + 1) {
        q.reported = i + 1;
        this.effects.position(q.spec.id, i + 1);
      }
    });
    this.reapAbandonedSwaps();
  }

  /**
   * A waiter past its patience that is blocked by busy models gets every model it must evict:
   * none of them takes new work (an idle one included, or it would be busy again by the time
   * the others drain), so a stream of requests cannot starve another model forever.
   */
  private markDraining(): void {
    if (this.anyDraining) for (const m of this.models.all()) m.draining = false;
    this.anyDraining = false;
    if (this.queue.length === 0) return;
    const now = this.clock.now();
    for (const q of this.queue) {
      if (!this.patienceSpent(q, now)) continue;
      const m = this.models.get(q.spec.model)!;
      if (m.state === "ready" || m.state === "stopping" || this.swapFor(m.id)) continue;
      const plan = this.policy.evictionFor(m.id, this.models.runningLru());
      if (!plan.ok || plan.evict.some((v) => this.inTransition(v))) continue;
      if (!plan.evict.some((v) => this.models.get(v)!.inflight > 0)) continue;
      for (const v of plan.evict) this.models.get(v)!.draining = true;
      this.anyDraining = true;
    }
  }

  /**
   * A swap whose waiters all left is loading a model nobody wants; when something else is
   * queued behind it, stop it now rather than finish a load only to evict it.
   */
  private reapAbandonedSwaps(): void {
    if (this.queue.length === 0) return;
    for (const swap of this.swaps.values()) {
      if (swap.waiters.length === 0) this.abortSwap(swap, "abandoned");
    }
  }

  /** Abort once: the target must not come up; the swap still ends with its swapDone. */
  private abortSwap(swap: ActiveSwap, reason: string): void {
    if (swap.abortedFor !== null) return;
    swap.abortedFor = reason;
    this.effects.abortSwap(swap.id, reason);
  }

  private patienceSpent(q: Queued, now: number): boolean {
    return now - q.arrivedAt >= q.patienceMs;
  }

  /** TTL: stop ready models idle for longer than their `ttl_s`. */
  private expireIdle(): void {
    const due = this.models.idleExpired(this.clock.now()).filter((id) => !this.stopping.has(id));
    this.stopOutsideSwap(due, "ttl");
  }

  private stopOutsideSwap(models: string[], reason: string): void {
    if (models.length === 0) return;
    for (const id of models) {
      this.stopping.add(id);
      const m = this.models.get(id)!;
      m.unloadPending = false;
      if (m.state === "ready") this.models.setState(id, "stopping");
    }
    this.effects.stopModels(models, reason);
  }

  private rearm(): void {
    const at = this.closed ? null : this.nextDeadline();
    if (at !== this.armedWake) {
      this.armedWake = at;
      this.effects.wakeAt(at);
    }
  }

  /** Earliest TTL, hold expiry or patience deadline still ahead: when the queue may unblock. */
  private nextDeadline(): number | null {
    const now = this.clock.now();
    let at = this.models.nextDeadline(now);
    for (const q of this.queue) {
      const due = q.arrivedAt + q.patienceMs;
      if (due > now && (at === null || due < at)) at = due;
    }
    return at;
  }

  private swapFor(target: string): ActiveSwap | undefined {
    for (const s of this.swaps.values()) if (s.target === target) return s;
    return undefined;
  }

  private inTransition(model: string): boolean {
    if (this.stopping.has(model)) return true;
    for (const s of this.swaps.values()) {
      if (s.target === model || s.evict.includes(model)) return true;
    }
    return false;
  }

  private *allWaiting(): Iterable<Queued> {
    yield* this.queue;
    for (const s of this.swaps.values()) yield* s.waiters;
  }
}

function shuttingDown(): QmError {
  return new QmError("shutting_down", "qm is shutting down; the request was not served");
}
