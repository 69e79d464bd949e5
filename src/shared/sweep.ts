/**
 * One coarse timer for many deadlines. Every request has time limits (a body that stops
 * arriving, a model that never answers, a client that left); arming and clearing a timer and
 * an abort listener for each of them costs more CPU per request than the rest of the proxy's
 * bookkeeping. Instead, whatever has a deadline joins the sweep while it is live, and one
 * timer, running only while something is live, looks at each every `periodMs`: a limit is
 * noticed at most one period late, which is nothing next to limits of seconds to minutes.
 */
import { realTimers, type Timers } from "./timer.ts";

export interface Swept {
  /** Looks at the clock (`now`, the sweep's time) and acts on whatever limit has passed. */
  sweep(now: number): void;
}

/** How often the sweep looks: the most a limit can be noticed late. */
export const SWEEP_PERIOD_MS = 100;

export class Sweep<T extends Swept = Swept> {
  private readonly live = new Set<T>();
  private handle: unknown = null;
  private count = 0;

  constructor(
    readonly timers: Timers = realTimers,
    readonly periodMs = SWEEP_PERIOD_MS,
  ) {}

  now(): number {
    return this.timers.now();
  }

  add(entry: T): void {
    this.count++;
    this.live.add(entry);
    if (this.handle === null) this.handle = this.timers.set(this.tick, this.periodMs);
  }

  /** The timer stops at its next tick once nothing is live. */
  delete(entry: T): void {
    this.live.delete(entry);
  }

  get size(): number {
    return this.live.size;
  }

  /** Entries ever added: work started, for a watch on whether any was (`IdleMemory`). */
  get added(): number {
    return this.count;
  }

  /** Each live entry, on a copy: `fn` may end them. */
  forEach(fn: (entry: T) => void): void {
    for (const entry of [...this.live]) fn(entry);
  }

  private readonly tick = (): void => {
    this.handle = null;
    if (this.live.size === 0) return;
    const now = this.timers.now();
    // Entries that end while swept leave the set; a Set's iterator copes with that.
    for (const entry of this.live) entry.sweep(now);
    if (this.live.size > 0 && this.handle === null) {
      this.handle = this.timers.set(this.tick, this.periodMs);
    }
  };
}

/** The process's sweep on real time, for callers that are not given one. */
export const realSweep = new Sweep();
