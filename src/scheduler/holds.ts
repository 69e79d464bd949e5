import type { Clock } from "../shared/clock.ts";
import { type GapBook, type GapEstimate, WINDOW_FACTOR } from "./gaps.ts";
import { type HoldVerdict, holdVerdict, type SwapCosts, UNMEASURED_WHOLE } from "./hold-cost.ts";
import type { ModelEntry, ModelTable } from "./models.ts";
import type { Effects, ServeOutcome } from "./types.ts";
import type { Queued } from "./waiter.ts";

/**
 * Before any gap was seen, the request's own window (`hold_ms` / `X-QM-Hold-Ms`) bounds the
 * hold, with the margin a seen gap would get; status shows it as the gap. The cost verdict
 * does not take it for one: it reads the gap so far (`remaining`).
 */
function priorGap(holdMs: number): GapEstimate {
  return { typicalMs: holdMs, windowMs: Math.ceil(holdMs * WINDOW_FACTOR), source: "prior" };
}

/**
 * Why a swap breaks holds: a waiter past its patience, (cost policy) the verdict's reason, or a
 * waiter of a higher-priority key.
 */
export type HoldBreak = "patience" | "cost" | "fairness" | "priority";

/** What the cost verdict knows of the waiter (see `Holds.verdict`). */
export interface HoldWaiter {
  id: number;
  model: string;
  conversation: string | null;
  heldWaitMs: number;
}

/**
 * Time in the scheduler: idle-grace holds, waiters' patience, TTL expiry, and the one wake
 * timer armed for the earliest of their deadlines. See design.md, "Holds, patience, wake".
 */
export class Holds {
  /** The deadline the wake timer is armed for (null = disarmed). */
  private armedWake: number | null = null;
  /** Whether any model is marked draining (so the marks need clearing). */
  private anyDraining = false;
  /**
   * No hold granted so far ends before this (null: none pending), so `expire` costs one
   * comparison on the events where no hold is due. It may be early (a hold ended otherwise).
   */
  private nextExpiry: number | null = null;

  constructor(
    private readonly models: ModelTable,
    private readonly clock: Clock,
    private readonly effects: Pick<Effects, "wakeAt" | "holdChanged">,
    /** `hold_on = "request"`: every finished request earns a hold, not only tool calls. */
    private holdOnEveryRequest: boolean,
    /** `hold_policy`: `"cost"` weighs each hold (`gaps`, `costs`); `"fixed"` holds `hold_ms`. */
    private policy: "cost" | "fixed",
    private readonly gaps: GapBook,
    private readonly costs: SwapCosts,
  ) {}

  /** A reload changed `scheduler.hold_on` / `hold_policy`: the next finished request follows it. */
  setHoldOn(everyRequest: boolean, policy: "cost" | "fixed" = this.policy): void {
    this.holdOnEveryRequest = everyRequest;
    this.policy = policy;
  }

  get costPolicy(): boolean {
    return this.policy === "cost";
  }

  /** Past its patience, a waiter ignores other models' holds (and may mark them draining). */
  patienceSpent(q: Queued, now = this.clock.now()): boolean {
    return now - q.arrivedAt >= q.patienceMs;
  }

  /**
   * A waiter past its patience that is blocked by busy models (step 5) gets every model it
   * must evict: none of them takes new work (an idle one included, or it would be busy again
   * by the time the others drain), so a stream of requests cannot starve another model
   * forever. `blockedBy(q)` is that evict set, or null when busy models do not block `q`.
   * The marks are recomputed from scratch on every drain.
   */
  markDraining(queue: Iterable<Queued>, blockedBy: (q: Queued) => readonly string[] | null): void {
    if (this.anyDraining) for (const m of this.models.all()) m.draining = false;
    this.anyDraining = false;
    const now = this.clock.now();
    for (const q of queue) {
      if (!this.patienceSpent(q, now)) continue;
      const evict = blockedBy(q);
      if (evict === null) continue;
      for (const v of evict) this.models.get(v)!.draining = true;
      this.anyDraining = true;
    }
  }

  /**
   * A granted request of `conversation` finished on `m`. Only a response that can be followed
   * by another round earns a hold (`hold_on`); its tool gap starts now. `"fixed"`: the window
   * is the one its own request asked for. `"cost"`: a request that asked for none (`0`) gets
   * none, nor does one without evidence that a tool result will follow (`GapBook.earnsHold`,
   * with `hold_on = "tool_calls"`); otherwise the window is the conversation's expected gap
   * (`GapBook.estimate`), or the window it asked for while no gap was ever seen.
   */
  finished(m: ModelEntry, holdMs: number, outcome: ServeOutcome, conversation: string): void {
    if (!this.holdOnEveryRequest && !outcome.toolCalls) return;
    const now = this.clock.now();
    if (this.policy === "fixed") {
      this.gaps.answered(conversation, m.id, now, holdMs > 0 ? holdMs : null);
      m.holdCandidateMs = Math.max(m.holdCandidateMs, holdMs);
      return;
    }
    const est = this.gaps.estimate(conversation, m.id) ?? priorGap(holdMs);
    // The evidence is taken before this answer joins the record it is judged by.
    const evidence = this.holdOnEveryRequest || this.gaps.earnsHold(conversation, m.id, now);
    this.gaps.answered(conversation, m.id, now, holdMs > 0 ? est.windowMs : null);
    if (holdMs <= 0 || !evidence) return;
    if (est.windowMs <= m.holdCandidateMs) return;
    m.holdCandidateMs = est.windowMs;
    m.holdCandidate = {
      conversation,
      typicalMs: est.typicalMs,
      windowMs: est.windowMs,
      source: est.source,
    };
  }

  /**
   * `m`'s last request drained: held for the longest window earned, unless it is stopping.
   * With none earned, under the cost policy, a hold whose loop ended is over.
   */
  drained(m: ModelEntry, stopping: boolean): void {
    if (!stopping && m.holdCandidateMs > 0) this.grant(m);
    else if (!stopping && this.policy === "cost") this.loopEnded(m);
    m.holdCandidateMs = 0;
    m.holdCandidate = null;
  }

  private grant(m: ModelEntry): void {
    const now = this.clock.now();
    const until = now + m.holdCandidateMs;
    m.heldUntil = until;
    m.holdEnded = null;
    if (this.nextExpiry === null || until < this.nextExpiry) this.nextExpiry = until;
    const basis = m.holdCandidate;
    if (basis === null) {
      m.hold = null;
      this.effects.holdChanged(m.id, "granted", until);
      return;
    }
    const swapBackMs = this.costs.swap(m.id, m.evictMode === "sleep");
    m.hold = { ...basis, from: now, swapBackMs };
    this.effects.holdChanged(m.id, "granted", until, {
      gapMs: basis.typicalMs,
      swapMs: swapBackMs,
    });
  }

  /**
   * `m` drained with no hold earned. Its hold (cost policy) waited for one conversation's tool
   * gap; if that conversation came back and answered without tool calls, its loop is over and
   * so is the gap: the hold ends now, reported `expired` (at this time, its deadline brought in).
   */
  private loopEnded(m: ModelEntry): void {
    const now = this.clock.now();
    if (m.hold === null || m.heldUntil <= now || this.gaps.waiting(m.hold.conversation)) return;
    m.heldUntil = 0;
    m.hold = null;
    m.holdEnded = { change: "expired", reason: "loop ended", at: now };
    this.effects.holdChanged(m.id, "expired", now);
  }

  /**
   * `hold_policy = "cost"`, decide step 5b: may `w` break the holds on `evict` now? Null under
   * `"fixed"` (holds stand until the waiter's patience). `waiting(except)`: the other requests
   * queued for a model that is not up, each kept waiting while the GPU idles in a hold.
   */
  verdict(
    w: HoldWaiter,
    evict: readonly string[],
    waiting: (except: number) => number,
  ): HoldVerdict | null {
    if (this.policy !== "cost") return null;
    const now = this.clock.now();
    const target = this.models.get(w.model)!;
    let remainingMs = 0;
    let swapBackMs = 0;
    let holderGapMs = 0;
    let unmeasured = false;
    let openMs: number | null = null;
    for (const id of evict) {
      const m = this.models.get(id)!;
      if (m.heldUntil <= now) continue;
      if (m.hold?.source === "prior") {
        unmeasured = true;
        openMs ??= this.gaps.longestOpen(now);
        const soFar = Math.max(now - m.hold.from, openMs);
        remainingMs = Math.max(remainingMs, soFar);
        holderGapMs = Math.max(holderGapMs, UNMEASURED_WHOLE * soFar);
      } else {
        remainingMs = Math.max(remainingMs, this.remaining(m, now));
        if (m.hold) holderGapMs = Math.max(holderGapMs, m.hold.typicalMs);
      }
      swapBackMs += this.costs.swap(id, m.evictMode === "sleep");
    }
    const waiters = 1 + waiting(w.id);
    const ownGapMs = this.gaps.typical(w.conversation);
    return holdVerdict({
      heldWaitMs: w.heldWaitMs,
      waiters,
      // A waiter with no gap seen to go by is taken to loop like the holder.
      waiterGapMs: ownGapMs ?? holderGapMs,
      remainingMs,
      swapInMs: this.costs.swap(w.model, target.evictMode === "sleep"),
      swapBackMs,
      // Each waiter's share of a gap never measured grows with it, and the waiter's own gap
      // with the whole when it is taken from the holder's.
      idleGrowth: unmeasured ? waiters + (ownGapMs === null ? UNMEASURED_WHOLE : 0) : 0,
    });
  }

  /**
   * The idle a hold is still expected to cost: what is left of its typical gap; for a gap
   * never measured (`prior`), as long again as it has lasted so far — the hold's own, or the
   * longest tool gap now in progress, if longer (another loop already away that long shows
   * gaps run that long here; design.md, "The first round").
   */
  private remaining(m: ModelEntry, now: number): number {
    if (m.hold === null) return Math.max(0, m.heldUntil - now);
    if (m.hold.source === "prior") {
      return Math.max(now - m.hold.from, this.gaps.longestOpen(now));
    }
    return Math.max(0, m.hold.from + m.hold.typicalMs - now);
  }

  /**
   * Holds whose deadline has passed are over: reported `expired` once, and cleared. Run at the
   * start of every event, so a hold that ran out is counted as expired before anything that
   * event decides (a preemption included) could end it otherwise. A hold ended by its model
   * leaving `ready` (swap, stop, crash) was cleared by the model table and is not reported here.
   */
  expire(): void {
    const now = this.clock.now();
    if (this.nextExpiry === null || now < this.nextExpiry) return;
    let next: number | null = null;
    for (const m of this.models.all()) {
      if (m.heldUntil <= 0) continue;
      if (m.heldUntil <= now) {
        const until = m.heldUntil;
        m.heldUntil = 0;
        m.hold = null;
        m.holdEnded = { change: "expired", reason: "gap spent", at: until };
        this.effects.holdChanged(m.id, "expired", until);
      } else if (next === null || m.heldUntil < next) {
        next = m.heldUntil;
      }
    }
    this.nextExpiry = next;
  }

  /**
   * A swap is about to evict `evict`: those still held are preempted by a waiter past its
   * patience, or dropped by the cost verdict (decide.ts step 5b). Their holds end with the swap
   * (`setState`).
   */
  preempting(evict: readonly string[], why: HoldBreak = "patience"): void {
    const now = this.clock.now();
    for (const id of evict) {
      const m = this.models.get(id);
      if (!m || m.heldUntil <= now) continue;
      if (why === "patience") {
        m.holdEnded = { change: "preempted", reason: "patience", at: now };
        this.effects.holdChanged(id, "preempted", m.heldUntil);
        continue;
      }
      m.holdEnded = { change: "dropped", reason: why, at: now };
      this.effects.holdChanged(id, "dropped", m.heldUntil, {
        gapMs: this.remaining(m, now),
        swapMs: this.costs.swap(id, m.evictMode === "sleep"),
        reason: why,
      });
    }
  }

  /** TTL: ready models idle for longer than their `ttl_s`, less those already stopping. */
  idleExpired(stopping: (id: string) => boolean): string[] {
    return this.models.idleExpired(this.clock.now()).filter((id) => !stopping(id));
  }

  /** The wake timer fired: it is spent, even if it fired a little early. */
  woke(): void {
    this.armedWake = null;
  }

  /** Arm the wake timer for the next deadline (`queue` null: closed, disarm). */
  rearm(queue: Iterable<Queued> | null): void {
    const at = queue === null ? null : this.nextDeadline(queue);
    if (at !== this.armedWake) {
      this.armedWake = at;
      this.effects.wakeAt(at);
    }
  }

  /**
   * Earliest TTL, hold expiry, patience deadline (of a request, or of its key's turn),
   * fairness bound or verdict review (cost policy) still ahead: when the queue may unblock.
   */
  nextDeadline(queue: Iterable<Queued>): number | null {
    const now = this.clock.now();
    let at = this.models.nextDeadline(now);
    for (const q of queue) {
      const due = q.arrivedAt + q.patienceMs;
      if (due > now && (at === null || due < at)) at = due;
      const fair = q.quantumAt;
      if (fair !== null && fair > now && (at === null || fair < at)) at = fair;
      const review = q.reviewAt;
      if (review !== null && review > now && (at === null || review < at)) at = review;
      const turn = q.turnAt;
      if (turn !== null && turn > now && (at === null || turn < at)) at = turn;
    }
    return at;
  }
}
