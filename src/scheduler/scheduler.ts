import type { Config, ModelConfig } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import type { Clock } from "../shared/clock.ts";
import type { QmError } from "../shared/errors.ts";
import { EventClock } from "./event-clock.ts";
import { FairShare } from "./fair-share.ts";
import { GapBook } from "./gaps.ts";
import { NO_FACTS, SwapCosts, type SwapFacts } from "./hold-cost.ts";
import { Holds } from "./holds.ts";
import { ModelTable } from "./models.ts";
import { type Reconfigure, reapRetired, shuttingDown } from "./reconfigure.ts";
import { type Parts, Requests } from "./requests.ts";
import { idleToShed, idleToShedOnCards } from "./shed.ts";
import { schedulerSnapshot } from "./snapshot.ts";
import { SwapBook } from "./swaps.ts";
import type { Effects, ModelState, RequestSpec, ServeOutcome, SwapResult } from "./types.ts";
import { WaitLine } from "./wait-line.ts";

export type { Reconfigure } from "./reconfigure.ts";

/**
 * The one scheduler of a qm process. Every decision is an event handled synchronously; it never
 * awaits, never does I/O, never throws to report a request's fate. See design.md beside it.
 * Here: the events, the run loop and what happens to models; a request's own path (its
 * decision, grant and end, and the drain) is requests.ts.
 */
export class Scheduler {
  private readonly p: Parts;
  private readonly requests: Requests;
  /** Events raised while one is handled (from an effect), waiting their turn. */
  private readonly pending: (() => void)[] = [];
  private running = false;
  /** Some model is retired (removed by a reload) and not yet forgotten. */
  private anyRetired = false;

  /**
   * `facts`: what swaps cost (the runtime's load-time history), for `hold_policy = "cost"`;
   * without them every swap costs `DEFAULT_SWAP_MS`.
   */
  constructor(
    config: Pick<Config, "models" | "scheduler" | "groups">,
    policy: EvictionPolicy,
    effects: Effects,
    wallClock: Clock,
    facts: SwapFacts = NO_FACTS,
  ) {
    const clock = new EventClock(wallClock);
    const models = new ModelTable(config, clock, (id, state, detail) =>
      effects.stateChanged(id, state, detail),
    );
    const gaps = new GapBook();
    const costs = new SwapCosts(facts, () => models.all().map((m) => m.id));
    this.p = {
      clock,
      models,
      swaps: new SwapBook(models, effects),
      holds: new Holds(
        models,
        clock,
        effects,
        config.scheduler.holdOn === "request",
        config.scheduler.holdPolicy ?? "cost",
        gaps,
        costs,
      ),
      queue: new WaitLine(effects),
      fair: new FairShare(config.scheduler.fairShare),
      gaps,
      effects,
      grants: new Map(),
      settings: {
        config,
        policy,
        defaults: { holdMs: config.scheduler.holdMs, patienceMs: config.scheduler.patienceMs },
        maxQueue: config.scheduler.maxQueue,
        closed: false,
      },
    };
    this.requests = new Requests(this.p);
  }

  // ── events ────────────────────────────────────────────────────────────────────────────────

  request(spec: RequestSpec): void {
    this.run(() => this.requests.onRequest(spec));
  }
  swapDone(swapId: number, result: SwapResult): void {
    this.run(() => this.requests.onSwapDone(swapId, result));
  }
  serveDone(requestId: number, outcome: ServeOutcome = { toolCalls: false }): void {
    this.run(() => this.requests.onServeDone(requestId, outcome));
  }
  /** The caller of a request that was not granted yet went away. */
  cancel(requestId: number): void {
    this.run(() => this.requests.onCancel(requestId));
  }
  /** A model asked to stop through `Effects.stopModels` is gone. */
  stopped(model: string): void {
    this.run(() => {
      this.requests.freeingRam.delete(model);
      this.p.swaps.stopped(model);
    });
  }
  /** A model asked to sleep through `Effects.sleepModels` is asleep (or, false, was stopped). */
  slept(model: string, asleep: boolean): void {
    this.run(() => this.p.swaps.slept(model, asleep));
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
    this.p.models.add(model);
    if (model.variantOf) this.p.settings.policy.addVariant(model.id, model.variantOf.base);
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
    return this.p.models.get(model)?.state;
  }

  /** Models holding memory, least recently used first (what the policy is asked with). */
  runningLru(): string[] {
    return this.p.models.runningLru();
  }

  /** The policy's answer for `target` now, over the models holding memory (read-only). */
  evictionFor(target: string) {
    return this.p.settings.policy.evictionFor(target, this.p.models.runningLru());
  }

  /** Several GPUs: the cards `model` runs on while it holds memory; undefined = not placed. */
  placementOf(model: string): readonly number[] | undefined {
    return this.p.models.get(model)?.gpus ?? undefined;
  }

  /** Granted requests running on `model` now. */
  inflightOf(model: string): number {
    return this.p.models.get(model)?.inflight ?? 0;
  }

  /** `model` is starting or stopping, or in a swap or a stop in progress. */
  inTransition(model: string): boolean {
    const m = this.p.models.get(model);
    return m?.state === "starting" || m?.state === "stopping" || this.p.swaps.inTransition(model);
  }

  snapshot() {
    const { models, queue, swaps, fair, gaps, grants, clock } = this.p;
    return schedulerSnapshot({
      models,
      queue,
      swaps,
      fair,
      gaps,
      inflight: grants.size,
      now: clock.now(),
    });
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
    const { clock, holds, settings } = this.p;
    try {
      for (let h = this.pending.shift(); h; h = this.pending.shift()) {
        clock.begin();
        this.requests.beginEvent();
        holds.expire();
        h();
        if (this.anyRetired) this.anyRetired = reapRetired(this.p.models, this.p.swaps);
        if (!settings.closed) this.requests.drain();
        holds.rearm(settings.closed ? null : this.p.queue);
      }
    } finally {
      clock.end();
      this.running = false;
    }
  }

  // ── what happens to models ────────────────────────────────────────────────────────────────

  private onExited(model: string, error: QmError): void {
    const m = this.p.models.get(model);
    // Exits during a swap come back as swapDone; a sleeping process may die in its sleep.
    if (!m || (m.state !== "ready" && m.state !== "sleeping")) return;
    this.p.models.crashed(model, error.message);
  }

  private onAdopt(model: string): void {
    const m = this.p.models.get(model);
    if (!m || this.p.settings.closed || m.retired || this.p.swaps.inTransition(model)) return;
    if (m.state === "stopped" || m.state === "failed") this.p.models.setState(model, "ready");
  }

  private onGone(model: string, detail: string): void {
    const m = this.p.models.get(model);
    if (!m || m.state !== "ready" || this.p.swaps.inTransition(model)) return;
    this.p.models.crashed(model, detail, "stopped");
  }

  private onUnload(model: string | null): void {
    this.p.swaps.unload(model === null ? this.p.models.all().map((m) => m.id) : [model]);
  }

  private onWake(): void {
    this.p.holds.woke();
    // TTL deadlines pass only with time, and every one has the wake timer armed for it.
    // An `evict = "sleep"` model's TTL puts it to sleep; the rest stop.
    if (!this.p.settings.closed)
      this.p.swaps.evictOutsideSwap(
        this.p.holds.idleExpired((id) => this.p.swaps.isStopping(id)),
        { kind: "ttl" },
      );
  }

  private onShed(limitGb: number, cards?: readonly { index: number; ceilingGb: number }[]): void {
    const now = this.p.clock.now();
    const victims =
      cards && cards.length > 0
        ? idleToShedOnCards(cards, this.p.settings.config, this.p.models, this.p.swaps, now)
        : idleToShed(limitGb, this.p.settings.config, this.p.models, this.p.swaps, now);
    this.p.swaps.evictOutsideSwap(victims, { kind: "gpu_pressure" });
  }

  private onReconfigure(c: Reconfigure): void {
    const { scheduler } = c.config;
    Object.assign(this.p.settings, {
      config: c.config,
      policy: c.policy,
      defaults: { holdMs: scheduler.holdMs, patienceMs: scheduler.patienceMs },
      maxQueue: scheduler.maxQueue,
    });
    this.p.fair.configure(scheduler.fairShare);
    this.p.holds.setHoldOn(scheduler.holdOn === "request", scheduler.holdPolicy ?? "cost");
    for (const m of Object.values(c.config.models)) this.p.models.update(m);
    for (const id of c.retire) {
      const m = this.p.models.get(id);
      if (!m) continue;
      m.retired = true;
      this.anyRetired = true;
    }
    this.p.swaps.unload(c.retire);
  }

  private onShutdown(): void {
    this.p.settings.closed = true;
    const err = shuttingDown();
    for (const q of [...this.p.queue.takeAll(), ...this.p.swaps.takeWaiters()]) {
      this.p.fair.leave(q);
      this.p.effects.fail(q.spec.id, err);
    }
  }
}
