/**
 * Memory given back once qm goes quiet. Under load the engine's heap grows, and what it frees
 * afterwards it keeps for reuse rather than returning it: qm's RSS stayed 10 – 11 MB above its
 * idle figure for good after a burst of streams, though the garbage collector had run. A full
 * collection followed by `Bun.shrink` (JavaScriptCore releases its unused memory) brought it
 * back to within a few MB of idle.
 *
 * Doing that costs a full collection (milliseconds), so it is done once per quiet spell, never
 * under load: one coarse timer looks at the work every `QUIET_MS`; when some was started since
 * the last look, it only notes that memory is owed; at a look that finds nothing started
 * since the last one and nothing running, it gives the memory back, once. A qm that serves nothing pays one
 * look every 10 s and one release after its start (the config load's garbage).
 *
 * What start-up left (the config, the modules' first run, the listeners: about 2 MB here) goes
 * back `SETTLE_MS` after the start if no work has begun by then, rather than a quiet period
 * later: a qm just started shows its idle memory within a second, not after 20 s.
 */
import { every, realTimers, type Timers, unrefTimer } from "./timer.ts";

/** How long qm must have been quiet before its memory is given back. */
export const QUIET_MS = 10_000;
/** After the start, when what start-up left is given back (if no work has begun). */
export const SETTLE_MS = 500;

/** What the watch reads of the work: how much was ever started, and how much runs now. */
export interface Work {
  /** Grows with every piece of work started (never goes down). */
  readonly added: number;
  /** Pieces running now. */
  readonly size: number;
}

/** A full collection, then the engine's unused memory handed back to the system. */
export function releaseMemory(): void {
  Bun.gc(true);
  Bun.shrink();
}

export class IdleMemory {
  /** `work.added` at the last look; -1 before the first (what start-up left is owed). */
  private seen = -1;
  private owed = false;
  private stopTimer: (() => void) | null = null;
  private settle: unknown = null;

  constructor(
    private readonly work: Work,
    private readonly release: () => void = releaseMemory,
    private readonly timers: Timers = realTimers,
    private readonly quietMs = QUIET_MS,
  ) {}

  /** Starts looking (timers that do not keep the process alive). */
  start(): void {
    if (this.stopTimer !== null) return;
    this.stopTimer = every(() => this.look(), this.quietMs, this.timers, { unref: true });
    this.settle = this.timers.set(() => this.settled(), SETTLE_MS);
    unrefTimer(this.settle);
  }

  stop(): void {
    this.stopTimer?.();
    this.stopTimer = null;
    if (this.settle !== null) this.timers.clear(this.settle);
    this.settle = null;
  }

  /** Start-up is over: its leftovers go back now, unless work has begun (a look pays later). */
  private settled(): void {
    this.settle = null;
    if (this.seen !== -1 || this.work.added !== 0 || this.work.size > 0) return;
    this.seen = 0;
    this.release();
  }

  /** One look: work started since the last one owes a release; a quiet period pays it. */
  look(): void {
    const added = this.work.added;
    if (added !== this.seen) {
      this.seen = added;
      this.owed = true;
      return;
    }
    if (!this.owed || this.work.size > 0) return;
    this.owed = false;
    this.release();
  }
}
