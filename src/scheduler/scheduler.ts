import type { Config, ModelConfig } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import type { Clock } from "../shared/clock.ts";
import { QmError } from "../shared/errors.ts";
import { type DecideView, type Decision, decide } from "./decide.ts";
import { EventClock } from "./event-clock.ts";
import { GapBook } from "./gaps.ts";
import { NO_FACTS, SwapCosts, type SwapFacts } from "./hold-cost.ts";
import { Holds } from "./holds.ts";
import { idleExpiry, ModelTable } from "./models.ts";
import { idleToShed, idleToShedOnCards } from "./shed.ts";
import { SwapBook } from "./swaps.ts";
import type { Effects, ModelState, RequestSpec, ServeOutcome, SwapResult } from "./types.ts";
import { WaitLine } from "./wait-line.ts";
import { heldWait, type Queued, waiter } from "./waiter.ts";

interface Grant {
  model: string;
  holdMs: number;
  /** Its conversation key (`conversationOf`). */
  conversation: string;
  keepAliveMs: number | undefined;
  /** The model's generation at grant time: a crash starts a new one. */
  generation: number;
}

/**
 * The one scheduler of a qm process. Every decision is an event handled synchronously; it never
 * awaits, never does I/O, never throws to report a request's fate. See design.md beside it.
 */
export class Scheduler {
  /** The clock, read once per event: every step of one decision sees the same time. */
  private readonly clock: EventClock;
  private readonly models: ModelTable;
  private readonly swaps: SwapBook;
  private readonly holds: Holds;
  private readonly queue: WaitLine;
  private readonly grants = new Map<number, Grant>();
  private closed = false;
  /** Events raised while one is handled (from an effect), waiting their turn. */
  private readonly pending: (() => void)[] = [];
  private running = false;
  private readonly view: DecideView;
  /** Sleeping models being stopped to free the RAM they hold (decide step 3b). */
  private readonly freeingRam = new Set<string>();
  /** Some model is retired (removed by a reload) and not yet forgotten. */
  private anyRetired = false;

  private config: Pick<Config, "models" | "groups">;
  private defaults: { holdMs: number; patienceMs: number };
  private maxQueue: number;

  /** Tool gaps per conversation, learned from this scheduler's own events (cost policy). */
  private readonly gaps = new GapBook();
  private readonly costs: SwapCosts;

  /**
   * `facts`: what swaps cost (the runtime's load-time history), for `hold_policy = "cost"`;
   * without them every swap costs `DEFAULT_SWAP_MS`.
   */
  constructor(
    config: Pick<Config, "models" | "scheduler" | "groups">,
    private policy: EvictionPolicy,
    private readonly effects: Effects,
    wallClock: Clock,
    facts: SwapFacts = NO_FACTS,
  ) {
    this.clock = new EventClock(wallClock);
    const clock = this.clock;
    this.defaults = { holdMs: config.scheduler.holdMs, patienceMs: config.scheduler.patienceMs };
    this.maxQueue = config.scheduler.maxQueue;
    this.config = config;
    this.models = new ModelTable(config, clock, (id, state, detail) =>
      this.effects.stateChanged(id, state, detail),
    );
    this.queue = new WaitLine(effects);
    this.swaps = new SwapBook(this.models, effects);
    this.costs = new SwapCosts(facts, () => this.models.all().map((m) => m.id));
    this.holds = new Holds(
      this.models,
      clock,
      effects,
      config.scheduler.holdOn === "request",
      config.scheduler.holdPolicy ?? "cost",
      this.gaps,
      this.costs,
    );
    this.view = {
      model: (id) => this.models.get(id)!,
      hasSlot: (id) => this.models.hasSlot(id),
      swapFor: (id) => this.swaps.swapFor(id),
      stopping: (id) => this.swaps.isStopping(id),
      inTransition: (id) => this.swaps.inTransition(id),
      held: (id) => this.models.held(id, this.clock.now()),
      holdVerdict: (req, evict) =>
        this.holds.verdict(
          {
            id: req.id ?? -1,
            model: req.model,
            conversation: req.conversation ?? null,
            heldWaitMs: req.heldWaitMs ?? 0,
          },
          evict,
          (except) => this.queue.countWhere((q) => q.spec.id !== except && this.needsSwap(q)),
        ),
      evictionFor: (id) => this.evictionFor(id),
      ramSleeper: () => this.ramSleeper(),
    };
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
    this.run(() => {
      this.freeingRam.delete(model);
      this.swaps.stopped(model);
    });
  }
  /** A model asked to sleep through `Effects.sleepModels` is asleep (or, false, was stopped). */
  slept(model: string, asleep: boolean): void {
    this.run(() => this.swaps.slept(model, asleep));
  }
  /** A ready (or sleeping) model's process exited without being asked to. */
  exited(model: string, error: QmError): void {
    this.run(() => this.onExited(model, error));
  }
  /**
   * A model found serving that the scheduler holds as stopped or failed (a managed node loaded
   * it outside qm): it is ready from now on, least recently used, so its memory is accounted.
   * Ignored while the model is in a transition.
   */
  adopt(model: string): void {
    this.run(() => this.onAdopt(model));
  }
  /**
   * A ready model found gone without being asked (a managed node unloaded it outside qm): it is
   * stopped, and requests granted on it no longer count (as after a crash). Ignored in a
   * transition.
   */
  gone(model: string, detail: string): void {
    this.run(() => this.onGone(model, detail));
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
   * `cards` (several GPUs): the same on each card, against its own ceiling.
   */
  shed(vramLimitGb: number, cards?: readonly { index: number; ceilingGb: number }[]): void {
    this.run(() => this.onShed(vramLimitGb, cards));
  }
  /** A `?ctx=` variant was minted: schedule it like any configured model. */
  addModel(model: ModelConfig): void {
    this.models.add(model);
    if (model.variantOf) this.policy.addVariant(model.id, model.variantOf.base);
  }

  /**
   * A config reload (src/runtime/reload.md): the models' live settings, the scheduler
   * settings and the policy apply from this event on; `retire` are models removed from the
   * config, unloaded (now when idle, once drained when busy) and forgotten once stopped.
   */
  reconfigure(change: Reconfigure): void {
    this.run(() => this.onReconfigure(change));
  }

  /** Refuse new work and fail everything not yet granted. */
  shutdown(): void {
    this.run(() => this.onShutdown());
  }

  // ── read-only views (for status pages; never used to gate a decision from outside) ───────

  state(model: string): ModelState | undefined {
    return this.models.get(model)?.state;
  }

  /** Models holding memory, least recently used first (what the policy is asked with). */
  runningLru(): string[] {
    return this.models.runningLru();
  }

  /** The policy's answer for `target` now, over the models holding memory (read-only). */
  evictionFor(target: string) {
    return this.policy.evictionFor(target, this.models.runningLru());
  }

  /** Several GPUs: the cards `model` runs on while it holds memory; undefined = not placed. */
  placementOf(model: string): readonly number[] | undefined {
    return this.models.get(model)?.gpus ?? undefined;
  }

  /** Granted requests running on `model` now. */
  inflightOf(model: string): number {
    return this.models.get(model)?.inflight ?? 0;
  }

  /** `model` is starting or stopping, or in a swap or a stop in progress. */
  inTransition(model: string): boolean {
    const m = this.models.get(model);
    return m?.state === "starting" || m?.state === "stopping" || this.swaps.inTransition(model);
  }

  snapshot() {
    const queuedFor = new Map<string, number>();
    for (const q of [...this.queue, ...this.swaps.waiters()]) {
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
        hold:
          m.hold !== null && m.heldUntil > this.clock.now()
            ? {
                conversation: keyed(m.hold.conversation),
                gapMs: m.hold.typicalMs,
                windowMs: m.hold.windowMs,
                swapBackMs: m.hold.swapBackMs,
              }
            : null,
        holdEnded: m.holdEnded,
        keepAliveMs: m.keepAliveMs,
        idleExpiry: idleExpiry(m),
        gpus: m.gpus,
      })),
      queueDepth: this.queue.length,
      /** Queued requests held back by other models' holds (cost policy), with their bounds. */
      heldBack: [...this.queue]
        .filter((q) => q.quantumAt !== null)
        .map((q) => ({
          id: q.spec.id,
          model: q.spec.model,
          heldWaitMs: heldWait(q, this.clock.now()),
          quantumAt: q.quantumAt!,
        })),
      swaps: this.swaps.snapshot(),
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
        this.clock.begin();
        this.holds.expire();
        h();
        if (this.anyRetired) this.reapRetired();
        if (!this.closed) this.drain();
        this.holds.rearm(this.closed ? null : this.queue);
      }
    } finally {
      this.clock.end();
      this.running = false;
    }
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
    const q = waiter(spec, this.clock.now(), this.defaults);
    // A request of a conversation whose last answer ended in tool calls ends its tool gap.
    this.gaps.asked(conversationOf(spec.model, q.conversation), this.clock.now(), spec.toolResult);
    const decision = this.decide(q);
    // The waiting line is bounded: past `max_queue`, only a request that is served at once
    // gets in; the rest are told to come back (503 + Retry-After) rather than pile up.
    if (this.waitingCount() >= this.maxQueue && decision.kind !== "grant") {
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
    if (!this.proceed(q, decision)) this.queue.push(q);
  }

  private decide(q: Queued): Decision {
    // A model removed by a reload and now gone: what still waited for it ends here.
    if (!this.models.get(q.spec.model)) {
      return { kind: "fail", error: notConfigured(q.spec.model) };
    }
    return decide(
      {
        model: q.spec.model,
        patienceSpent: this.holds.patienceSpent(q),
        id: q.spec.id,
        conversation: conversationOf(q.spec.model, q.conversation),
        heldWaitMs: heldWait(q, this.clock.now()),
      },
      this.view,
    );
  }

  /** Acts on the decision. True when the request left the waiting line, false when it waits. */
  private proceed(q: Queued, d: Decision): boolean {
    this.trackHeldWait(q, d);
    switch (d.kind) {
      case "join":
        this.swaps.join(q);
        return true;
      case "grant":
        this.deliver(q);
        return true;
      case "fail":
        this.effects.fail(q.spec.id, d.error);
        return true;
      case "freeRam":
        this.freeingRam.add(d.sleeper);
        this.swaps.stopOutsideSwap([d.sleeper], `RAM for ${q.spec.model}`);
        return false;
      case "swap":
        this.holds.preempting(d.evict, d.breaks);
        this.swaps.begin(q.spec.model, d.evict, q, d.budget, d.gpus);
        return true;
      case "queue":
        return false;
    }
  }

  /**
   * The cost policy's fairness bound counts only time spent waiting behind idle holds: an
   * interval opens when a decision says "held" and closes at the next decision that does not
   * (the state cannot change between events, and every event re-decides every waiter).
   */
  private trackHeldWait(q: Queued, d: Decision): void {
    const now = this.clock.now();
    if (d.kind === "queue" && d.why === "held" && d.quantumMs !== undefined) {
      q.heldSince ??= now;
      q.quantumAt = now + Math.max(0, d.quantumMs - heldWait(q, now));
      return;
    }
    if (q.heldSince !== null) {
      q.heldWaitMs += now - q.heldSince;
      q.heldSince = null;
    }
    q.quantumAt = null;
  }

  /** Decide step 3b: `"freeing"`, the least-recently-used idle sleeper holding RAM, or null. */
  private ramSleeper(): string | null {
    if (this.freeingRam.size > 0) return "freeing";
    let best: { id: string; lastUse: number } | null = null;
    for (const m of this.models.all()) {
      if (m.state !== "sleeping" || this.swaps.inTransition(m.id)) continue;
      const c = this.config.models[m.id];
      if (!c || c.sleepLevel !== 1 || !(c.estRamGb > 0)) continue;
      if (best === null || m.lastUse < best.lastUse) best = { id: m.id, lastUse: m.lastUse };
    }
    return best?.id ?? null;
  }

  /** `q` waits for a model that is not up (nor coming up): it needs a swap. */
  private needsSwap(q: Queued): boolean {
    const state = this.models.get(q.spec.model)?.state;
    return state !== "ready" && state !== "starting";
  }

  /** Requests queued or waiting on a swap. */
  private waitingCount(): number {
    return this.queue.length + this.swaps.waiterCount();
  }

  private deliver(q: Queued): void {
    const id = q.spec.model;
    if (!this.effects.grant(q.spec.id, id)) return; // caller left: not in flight, nothing to undo
    this.grants.set(q.spec.id, {
      model: id,
      holdMs: q.holdMs,
      conversation: conversationOf(id, q.conversation),
      keepAliveMs: q.keepAliveMs,
      generation: this.models.get(id)!.generation,
    });
    this.models.touch(id);
    this.models.adjustInflight(id, +1);
  }

  private onSwapDone(swapId: number, result: SwapResult): void {
    const end = this.swaps.finish(swapId, result);
    if (!end) return;
    const { swap, error } = end;
    if (error) {
      for (const w of swap.waiters) this.effects.fail(w.spec.id, error);
      return;
    }
    // Waiters beyond the concurrency limit go back to the head of the line, in order.
    const overflow: Queued[] = [];
    for (const w of swap.waiters) {
      if (this.models.hasSlot(swap.target)) this.deliver(w);
      else overflow.push(w);
    }
    this.queue.unshift(overflow);
  }

  private onServeDone(requestId: number, outcome: ServeOutcome): void {
    const g = this.grants.get(requestId);
    if (!g) return;
    this.grants.delete(requestId);
    const m = this.models.get(g.model);
    if (!m || m.generation !== g.generation) return; // the process it ran on is gone
    this.holds.finished(m, g.holdMs, outcome, g.conversation);
    if (g.keepAliveMs !== undefined) m.keepAliveMs = g.keepAliveMs;
    this.models.adjustInflight(g.model, -1);
    if (m.inflight > 0) return;
    const unload = m.unloadPending;
    if (unload) this.swaps.stopOutsideSwap([g.model], "unload");
    this.holds.drained(m, unload);
    // `keep_alive: 0`: idle now, and asked to go once idle (no wake needed for "now").
    if (!unload && m.keepAliveMs === 0) {
      this.swaps.evictOutsideSwap(this.holds.idleExpired(this.view.stopping), "keep_alive 0");
    }
  }

  private onCancel(requestId: number): void {
    // Already granted (or unknown): the edge reports the end with serveDone, so a no-op.
    if (!this.queue.remove(requestId)) this.swaps.dropWaiter(requestId);
  }

  private onExited(model: string, error: QmError): void {
    const m = this.models.get(model);
    // Exits during a swap come back as swapDone; a sleeping process may die in its sleep.
    if (!m || (m.state !== "ready" && m.state !== "sleeping")) return;
    this.models.crashed(model, error.message);
  }

  private onAdopt(model: string): void {
    const m = this.models.get(model);
    if (!m || this.closed || m.retired || this.swaps.inTransition(model)) return;
    if (m.state === "stopped" || m.state === "failed") this.models.setState(model, "ready");
  }

  private onGone(model: string, detail: string): void {
    const m = this.models.get(model);
    if (!m || m.state !== "ready" || this.swaps.inTransition(model)) return;
    this.models.crashed(model, detail, "stopped");
  }

  private onUnload(model: string | null): void {
    this.swaps.unload(model === null ? this.models.all().map((m) => m.id) : [model]);
  }

  private onWake(): void {
    this.holds.woke();
    // TTL deadlines pass only with time, and every one has the wake timer armed for it.
    // An `evict = "sleep"` model's TTL puts it to sleep; the rest stop.
    if (!this.closed)
      this.swaps.evictOutsideSwap(this.holds.idleExpired(this.view.stopping), "ttl");
  }

  private onShed(limitGb: number, cards?: readonly { index: number; ceilingGb: number }[]): void {
    const now = this.clock.now();
    const victims =
      cards && cards.length > 0
        ? idleToShedOnCards(cards, this.config, this.models, this.swaps, now)
        : idleToShed(limitGb, this.config, this.models, this.swaps, now);
    this.swaps.evictOutsideSwap(victims, "GPU memory pressure");
  }

  private onReconfigure(c: Reconfigure): void {
    this.config = c.config;
    this.policy = c.policy;
    this.defaults = {
      holdMs: c.config.scheduler.holdMs,
      patienceMs: c.config.scheduler.patienceMs,
    };
    this.maxQueue = c.config.scheduler.maxQueue;
    this.holds.setHoldOn(
      c.config.scheduler.holdOn === "request",
      c.config.scheduler.holdPolicy ?? "cost",
    );
    for (const m of Object.values(c.config.models)) this.models.update(m);
    for (const id of c.retire) {
      const m = this.models.get(id);
      if (!m) continue;
      m.retired = true;
      this.anyRetired = true;
    }
    this.swaps.unload(c.retire);
  }

  /** Retired models that are down leave the table (their waiters fail in the drain after). */
  private reapRetired(): void {
    let left = false;
    for (const m of this.models.all()) {
      if (!m.retired) continue;
      const down =
        (m.state === "stopped" || m.state === "failed") && !this.swaps.inTransition(m.id);
      if (down) this.models.delete(m.id);
      else left = true;
    }
    this.anyRetired = left;
  }

  private onShutdown(): void {
    this.closed = true;
    const err = shuttingDown();
    for (const q of this.queue.takeAll()) this.effects.fail(q.spec.id, err);
    for (const w of this.swaps.takeWaiters()) this.effects.fail(w.spec.id, err);
  }

  // ── draining the queue ────────────────────────────────────────────────────────────────────

  /** Re-run the decision tree for every queued request, oldest first. */
  private drain(): void {
    this.holds.markDraining(this.queue, (q) => {
      const d = this.decide(q);
      return d.kind === "queue" && d.why === "busy" ? d.evict : null;
    });
    this.queue.drain((q) => this.proceed(q, this.decide(q)));
    if (this.queue.length > 0) this.swaps.reapAbandoned();
  }
}

/** What a reload hands the scheduler. */
export interface Reconfigure {
  config: Pick<Config, "models" | "scheduler" | "groups">;
  policy: EvictionPolicy;
  /** Models removed from the config. */
  retire: string[];
}

/**
 * The key a request's tool gaps are kept under: its conversation, or, without one, its model
 * (all of that model's keyless requests then count as one conversation).
 */
function conversationOf(model: string, conversation: string | null): string {
  return conversation ?? `\u0000model ${model}`;
}

/** A conversation key as status shows it: null for a model's keyless requests. */
function keyed(conversation: string | null): string | null {
  return conversation?.startsWith("\u0000") ? null : conversation;
}

function notConfigured(model: string): QmError {
  return new QmError("model_not_found", `model "${model}" was removed from the config`);
}

function shuttingDown(): QmError {
  return new QmError("shutting_down", "qm is shutting down; the request was not served");
}
