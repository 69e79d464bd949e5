import type { Clock } from "../shared/clock.ts";
import type { ModelEntry, ModelTable } from "./models.ts";
import type { Effects, ServeOutcome } from "./types.ts";
import type { Queued } from "./waiter.ts";

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
  ) {}

  /** A reload changed `scheduler.hold_on`: the next finished request follows it. */
  setHoldOn(everyRequest: boolean): void {
    this.holdOnEveryRequest = everyRequest;
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
   * A granted request finished on `m`. Only a response that can be followed by another round
   * earns a hold (`hold_on`), and the window is the one its own request asked for.
   */
  finished(m: ModelEntry, holdMs: number, outcome: ServeOutcome): void {
    if (this.holdOnEveryRequest || outcome.toolCalls) {
      m.holdCandidateMs = Math.max(m.holdCandidateMs, holdMs);
    }
  }

  /** `m`'s last request drained: held for the longest window earned, unless it is stopping. */
  drained(m: ModelEntry, stopping: boolean): void {
    if (!stopping && m.holdCandidateMs > 0) {
      const until = this.clock.now() + m.holdCandidateMs;
      m.heldUntil = until;
      if (this.nextExpiry === null || until < this.nextExpiry) this.nextExpiry = until;
      this.effects.holdChanged(m.id, "granted", until);
    }
    m.holdCandidateMs = 0;
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
        this.effects.holdChanged(m.id, "expired", until);
      } else if (next === null || m.heldUntil < next) {
        next = m.heldUntil;
      }
    }
    this.nextExpiry = next;
  }

  /**
   * A swap is about to evict `evict`: those still held are preempted (only a waiter past its
   * patience gets that far, decide.ts step 5b). Their holds end with the swap (`setState`).
   */
  preempting(evict: readonly string[]): void {
    const now = this.clock.now();
    for (const id of evict) {
      const m = this.models.get(id);
      if (m && m.heldUntil > now) this.effects.holdChanged(id, "preempted", m.heldUntil);
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

  /** Earliest TTL, hold expiry or patience deadline still ahead: when the queue may unblock. */
  nextDeadline(queue: Iterable<Queued>): number | null {
    const now = this.clock.now();
    let at = this.models.nextDeadline(now);
    for (const q of queue) {
      const due = q.arrivedAt + q.patienceMs;
      if (due > now && (at === null || due < at)) at = due;
    }
    return at;
  }
}
