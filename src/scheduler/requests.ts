import type { Config } from "../config/types.ts";
import type { EvictionPolicy } from "../policy/types.ts";
import { QmError } from "../shared/errors.ts";
import { type DecideView, type Decision, decide } from "./decide.ts";
import type { EventClock } from "./event-clock.ts";
import { EvictionMemo } from "./eviction-memo.ts";
import {
  type FairBooks,
  holdersWeight,
  holdRank,
  outranked,
  shareDrains,
  turnPatienceSpent,
  wanted,
} from "./fair-drains.ts";
import { ANONYMOUS, type FairShare } from "./fair-share.ts";
import type { GapBook } from "./gaps.ts";
import { conversationOf, type Grant } from "./grants.ts";
import type { Holds } from "./holds.ts";
import type { ModelTable } from "./models.ts";
import { notConfigured, shuttingDown } from "./reconfigure.ts";
import type { SwapBook } from "./swaps.ts";
import type { Effects, RequestSpec, ServeOutcome, SwapResult } from "./types.ts";
import type { WaitLine } from "./wait-line.ts";
import { heldWait, type Queued, waiter } from "./waiter.ts";

/** The settings a reload replaces, and whether the scheduler has shut down. */
export interface Settings {
  config: Pick<Config, "models" | "groups">;
  policy: EvictionPolicy;
  defaults: { holdMs: number; patienceMs: number };
  maxQueue: number;
  closed: boolean;
}

/** The scheduler's books, shared by the request path and the model events. */
export interface Parts {
  /** The clock, read once per event: every step of one decision sees the same time. */
  clock: EventClock;
  models: ModelTable;
  swaps: SwapBook;
  holds: Holds;
  queue: WaitLine;
  /** What each key is charged, and its caps (design.md, "Fair share between keys"). */
  fair: FairShare;
  /** Tool gaps per conversation, learned from the scheduler's own events (cost policy). */
  gaps: GapBook;
  effects: Effects;
  /** Granted requests not yet done, by request id. */
  grants: Map<number, Grant>;
  settings: Settings;
}

/**
 * A request's life in the scheduler: its arrival, the decision tree (and acting on its answer),
 * its grant, its end; and the drain that re-decides every waiter after each event. Called only
 * from the scheduler's run loop (scheduler.ts), one event at a time.
 */
export class Requests {
  readonly view: DecideView;
  /** Sleeping models being stopped to free the RAM they hold (decide step 3b). */
  readonly freeingRam = new Set<string>();
  /** Models marked draining by keys owed their share, at the last drain. */
  private shareMarked: string[] = [];
  private readonly fairBooks: FairBooks;
  /** Arrival numbers; and whether the line was put in fair order (undone once it is off). */
  private seq = 0;
  private arranged = false;
  private readonly evictions: EvictionMemo;

  constructor(private readonly p: Parts) {
    const { models, swaps, holds, queue, fair, clock } = p;
    this.fairBooks = { fair, models, gaps: p.gaps, now: 0 };
    this.evictions = new EvictionMemo(models, () => p.settings.policy);
    this.view = {
      model: (id) => models.get(id)!,
      hasSlot: (id) => models.hasSlot(id),
      swapFor: (id) => swaps.swapFor(id),
      stopping: (id) => swaps.isStopping(id),
      inTransition: (id) => swaps.inTransition(id),
      held: (id) => models.held(id, clock.now()),
      holdVerdict: (req, evict) => {
        // Only waiters of at least the holders' priority count against their holds.
        const floor = fair.contested ? holdersWeight(this.books(), evict) : 0;
        const counts = (q: Queued) =>
          this.needsSwap(q) && !fair.atCap(q) && fair.weight(q.key) >= floor;
        return holds.verdict(
          {
            id: req.id ?? -1,
            model: req.model,
            conversation: req.conversation ?? null,
            heldWaitMs: req.heldWaitMs ?? 0,
          },
          evict,
          (except) => queue.countWhere((q) => q.spec.id !== except && counts(q)),
        );
      },
      wanted: (req, evict) =>
        fair.contested &&
        !req.turnPatienceSpent &&
        wanted(this.books(), req.key ?? ANONYMOUS, evict),
      holdRank: (req, evict) =>
        fair.contested ? holdRank(this.books(), req.key ?? ANONYMOUS, evict) : "peer",
      evictionFor: (id) => this.evictions.evictionFor(id),
      ramSleeper: () => this.ramSleeper(),
    };
  }

  onRequest(spec: RequestSpec): void {
    if (this.p.settings.closed) {
      this.p.effects.fail(spec.id, shuttingDown());
      return;
    }
    if (!this.p.models.get(spec.model)) {
      // Step 1. The edge resolves aliases and answers unknown names itself; this is the guard.
      this.p.effects.fail(
        spec.id,
        new QmError("model_not_found", `model "${spec.model}" not found`),
      );
      return;
    }
    const q = waiter(spec, this.p.clock.now(), this.p.settings.defaults, ANONYMOUS, this.seq++);
    this.p.fair.arrived(q.key);
    // A request of a conversation whose last answer ended in tool calls ends its tool gap.
    this.p.gaps.asked(
      conversationOf(spec.model, q.conversation),
      this.p.clock.now(),
      spec.toolResult,
    );
    const decision = this.decide(q);
    // The waiting line is bounded: past `max_queue`, only a request that is served at once
    // gets in; the rest are told to come back (503 + Retry-After) rather than pile up.
    if (this.waitingCount() >= this.p.settings.maxQueue && decision.kind !== "grant") {
      this.p.effects.fail(
        spec.id,
        new QmError(
          "queue_full",
          `${this.p.settings.maxQueue} requests are already waiting (scheduler.max_queue); try again shortly`,
          { retryAfterS: 5 },
        ),
      );
      return;
    }
    if (!this.proceed(q, decision)) this.p.queue.push(q);
    else if (decision.kind !== "join" && decision.kind !== "swap") return;
    this.p.fair.enter(q);
  }

  decide(q: Queued): Decision {
    // A model removed by a reload and now gone: what still waited for it ends here.
    if (!this.p.models.get(q.spec.model)) {
      return { kind: "fail", error: notConfigured(q.spec.model) };
    }
    // 1b. its key is at its cap: wait, before joining or starting anything.
    if (this.p.fair.atCap(q)) return { kind: "queue", why: "key_limit" };
    return decide(
      {
        model: q.spec.model,
        patienceSpent: this.p.holds.patienceSpent(q),
        id: q.spec.id,
        conversation: conversationOf(q.spec.model, q.conversation),
        heldWaitMs: heldWait(q, this.p.clock.now()),
        key: q.key,
        turnPatienceSpent: this.p.fair.contested && turnPatienceSpent(this.books(), q),
      },
      this.view,
    );
  }

  /** A new event: the policy's answers are asked afresh (a reload may have changed it). */
  beginEvent(): void {
    this.evictions.clear();
  }

  /** What the cross-model fair-share rules read (fair-drains.ts), as of this event. */
  private books(): FairBooks {
    this.fairBooks.now = this.p.clock.now();
    return this.fairBooks;
  }

  /** Acts on the decision. True when the request left the waiting line, false when it waits. */
  private proceed(q: Queued, d: Decision): boolean {
    this.trackHeldWait(q, d);
    this.trackTurn(q, d);
    switch (d.kind) {
      case "join":
        this.p.swaps.join(q);
        return true;
      case "grant":
        this.deliver(q);
        return true;
      case "fail":
        this.p.fair.leave(q);
        this.p.effects.fail(q.spec.id, d.error);
        return true;
      case "freeRam":
        this.freeingRam.add(d.sleeper);
        this.p.swaps.stopOutsideSwap([d.sleeper], { kind: "ram", for: q.spec.model });
        return false;
      case "swap":
        this.p.holds.preempting(d.evict, d.breaks);
        this.p.swaps.begin(q.spec.model, d.evict, q, d.budget, d.gpus);
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
    const now = this.p.clock.now();
    if (d.kind === "queue" && d.why === "held" && d.quantumMs !== undefined) {
      q.heldSince ??= now;
      q.quantumAt = now + Math.max(0, d.quantumMs - heldWait(q, now));
      q.reviewAt = d.reviewMs == null ? null : now + d.reviewMs;
      return;
    }
    if (q.heldSince !== null) {
      q.heldWaitMs += now - q.heldSince;
      q.heldSince = null;
    }
    q.quantumAt = null;
    q.reviewAt = null;
  }

  /**
   * A waiter blocked by a higher-priority key's work or holds breaks through only once its key
   * has waited its patience for a turn: the wake timer is armed for that moment.
   */
  private trackTurn(q: Queued, d: Decision): void {
    q.turnAt = null;
    if (!this.p.fair.contested || d.kind !== "queue") return;
    if (
      d.why !== "wanted" &&
      !((d.why === "held" || d.why === "busy") && outranked(this.books(), q, d.evict))
    ) {
      return;
    }
    const at = this.p.fair.turnSince(q) + q.patienceMs;
    if (at > this.p.clock.now()) q.turnAt = at;
  }

  /** Decide step 3b: `"freeing"`, the least-recently-used idle sleeper holding RAM, or null. */
  private ramSleeper(): string | null {
    if (this.freeingRam.size > 0) return "freeing";
    let best: { id: string; lastUse: number } | null = null;
    for (const m of this.p.models.all()) {
      if (m.state !== "sleeping" || this.p.swaps.inTransition(m.id)) continue;
      const c = this.p.settings.config.models[m.id];
      if (!c || c.sleepLevel !== 1 || !(c.estRamGb > 0)) continue;
      if (best === null || m.lastUse < best.lastUse) best = { id: m.id, lastUse: m.lastUse };
    }
    return best?.id ?? null;
  }

  /** `q` waits for a model that is not up (nor coming up): it needs a swap. */
  private needsSwap(q: Queued): boolean {
    const state = this.p.models.get(q.spec.model)?.state;
    return state !== "ready" && state !== "starting";
  }

  /** Requests queued or waiting on a swap. */
  private waitingCount(): number {
    return this.p.queue.length + this.p.swaps.waiterCount();
  }

  private deliver(q: Queued): void {
    const id = q.spec.model;
    this.p.fair.leave(q);
    if (!this.p.effects.grant(q.spec.id, id)) return; // caller left: not in flight, nothing to undo
    this.p.grants.set(q.spec.id, {
      model: id,
      holdMs: q.holdMs,
      conversation: conversationOf(id, q.conversation),
      keepAliveMs: q.keepAliveMs,
      generation: this.p.models.get(id)!.generation,
      key: q.key,
    });
    this.p.fair.granted(q, id, this.p.clock.now());
    this.p.models.touch(id);
    this.p.models.adjustInflight(id, +1);
  }

  onSwapDone(swapId: number, result: SwapResult): void {
    const end = this.p.swaps.finish(swapId, result);
    if (!end) return;
    const { swap, error } = end;
    if (error) {
      for (const w of swap.waiters) {
        this.p.fair.leave(w);
        this.p.effects.fail(w.spec.id, error);
      }
      return;
    }
    // With keys sharing the model, its waiters go back to the line and the drain after this
    // event grants them, in their fair order together with any queued for it.
    if (this.p.fair.contested) {
      this.p.queue.unshift(swap.waiters);
      return;
    }
    // Waiters beyond the concurrency limit (or their key's cap) go back to the head of the
    // line, in order.
    const overflow: Queued[] = [];
    for (const w of swap.waiters) {
      if (this.p.models.hasSlot(swap.target) && !this.p.fair.atCap(w)) this.deliver(w);
      else overflow.push(w);
    }
    this.p.queue.unshift(overflow);
  }

  onServeDone(requestId: number, outcome: ServeOutcome): void {
    const g = this.p.grants.get(requestId);
    if (!g) return;
    this.p.grants.delete(requestId);
    this.p.fair.finished(g.key.name, g.model);
    const m = this.p.models.get(g.model);
    if (!m || m.generation !== g.generation) return; // the process it ran on is gone
    // The hold is the key's whose window it holds: the request that set the candidate.
    const [candidateMs, basis] = [m.holdCandidateMs, m.holdCandidate];
    this.p.holds.finished(m, g.holdMs, outcome, g.conversation);
    if (m.holdCandidateMs !== candidateMs || m.holdCandidate !== basis) {
      m.holdCandidateKey = g.key;
      m.holdCandidateConversation = g.conversation;
    }
    if (g.keepAliveMs !== undefined) m.keepAliveMs = g.keepAliveMs;
    this.p.models.adjustInflight(g.model, -1);
    if (m.inflight > 0) return;
    const unload = m.unloadPending;
    if (unload) this.p.swaps.stopOutsideSwap([g.model], { kind: "unload" });
    const earned = m.holdCandidateMs > 0 ? m.holdCandidateKey : null;
    this.p.holds.drained(m, unload);
    if (earned !== null && m.heldUntil > this.p.clock.now()) {
      m.holdKey = earned;
      m.holdConversation = m.holdCandidateConversation;
    }
    m.holdCandidateKey = null;
    m.holdCandidateConversation = null;
    // `keep_alive: 0`: idle now, and asked to go once idle (no wake needed for "now").
    if (!unload && m.keepAliveMs === 0) {
      this.p.swaps.evictOutsideSwap(this.p.holds.idleExpired(this.view.stopping), {
        kind: "keep_alive",
      });
    }
  }

  onCancel(requestId: number): void {
    // Already granted (or unknown): the edge reports the end with serveDone, so a no-op.
    const q = this.p.queue.remove(requestId) ?? this.p.swaps.dropWaiter(requestId);
    if (q) this.p.fair.leave(q);
  }

  /**
   * Re-run the decision tree for every queued request: oldest first, each model's waiters in
   * their fair order. First the draining marks: for waiters past their patience (a
   * lower-priority one: its key's, design.md "Fair share", 4), and for keys owed their share.
   */
  drain(): void {
    if (this.p.fair.contested) {
      this.p.queue.arrange((line) => this.p.fair.arrange(line));
      this.arranged = true;
    } else if (this.arranged) {
      // Fair share turned off by a reload: first come, first served from now on.
      this.p.queue.arrange((line) => [...line].sort((a, b) => a.seq - b.seq));
      this.arranged = false;
    }
    for (const id of this.shareMarked) {
      const m = this.p.models.get(id);
      if (m) m.draining = false;
    }
    this.p.holds.markDraining(this.p.queue, (q) => {
      const d = this.decide(q);
      if (d.kind !== "queue" || d.why !== "busy") return null;
      const books = this.books();
      return outranked(books, q, d.evict) && !turnPatienceSpent(books, q) ? null : d.evict;
    });
    this.shareMarked = !this.p.fair.contested
      ? []
      : shareDrains(
          this.books(),
          this.p.queue,
          (q) => this.needsSwap(q),
          (q) => this.decide(q),
        );
    for (const id of this.shareMarked) this.p.models.get(id)!.draining = true;
    this.p.queue.drain((q) => this.proceed(q, this.decide(q)));
    if (this.p.queue.length > 0) this.p.swaps.reapAbandoned();
  }
}
