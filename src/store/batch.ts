/**
 * The write queue: the request path only queues (never a statement, never an `fsync`); once a
 * second, on the injected timers, everything queued is written, in transactions of at most
 * `FLUSH_SLICE` writes, one per turn of the event loop (`close` writes the rest in one). A crash
 * loses at most what was queued since the last write. The queue is bounded: past `MAX_PENDING`
 * the oldest writes are dropped (said once in the log). A write that fails is logged once and
 * the database is given up: qm goes on with memory only. Longer upkeep (the bounds, prune.ts)
 * runs as a chore: one bounded step per turn, after the queue's slices; what is queued while a
 * chore runs still waits for the next flush.
 */
import type { Logger } from "../shared/log.ts";
import { every, type Timers } from "../shared/timer.ts";

/** One queued write: runs inside the transaction; returns the bytes of row text it wrote. */
export type Write = () => number;

/** What one step of a chore is taken to add to the write-ahead log (`logBytes`). */
export const STEP_LOG_BYTES = 512 << 10;

/** Writes queued at most; past it the oldest are dropped. */
export const MAX_PENDING = 10_000;
export const FLUSH_MS = 1000;
/**
 * Writes per transaction of the once-a-second flush: a longer queue (thousands of requests a
 * second) is written a slice per turn of the event loop, so no stream waits for all of it.
 */
export const FLUSH_SLICE = 64;

export class Batch {
  private pending: Write[] = [];
  private dropped = 0;
  private stop: (() => void) | null = null;
  private timers: Timers | null = null;
  /** The next turn's slice of the queue or step of the chore, when one is due; else null. */
  private nextSlice: unknown = null;
  /** Upkeep run a step per turn (`startChore`); null when none runs. */
  private chore: Iterator<unknown> | null = null;
  /**
   * A flush is under way: the queue is written a slice per turn until it is empty. Between
   * flushes what is queued waits for the next one, chore or not: a chore's turns write no rows,
   * so the log has quiet spells in which a checkpoint can take all of it in (database.ts).
   */
  private flushing = false;
  /**
   * About what the writes added to the write-ahead log since the database opened: the row
   * text written, and `STEP_LOG_BYTES` per step of a chore (what paces the checkpoints).
   */
  logBytes = 0;
  /** The row text written since the database opened (what grows the file). */
  rowBytes = 0;
  /** Why writing was given up, or null. */
  failed: string | null = null;

  constructor(
    /** Runs `fn` in one transaction. */
    private readonly transaction: (fn: () => void) => void,
    private readonly log: Logger,
    /** After each write of the queue (the database's bounds are kept then). */
    private readonly afterFlush: () => void = () => {},
    /** After each turn's work, a slice of the queue or a step of the chore (checkpoints). */
    private readonly afterWork: () => void = () => {},
    /** Whether the chore may step now; when it may again, `resume()`. */
    private readonly choreMayStep: () => boolean = () => true,
  ) {}

  get size(): number {
    return this.pending.length;
  }

  /** Queues a write for the next flush. */
  add(write: Write): void {
    if (this.failed !== null) return;
    if (this.pending.length >= MAX_PENDING) {
      this.pending.shift();
      if (this.dropped++ === 0) {
        this.log.warn(
          `the database falls behind: more than ${MAX_PENDING} writes queued; the oldest are dropped`,
        );
      }
    }
    this.pending.push(write);
  }

  /** Writes every second on `timers` until `close`, `FLUSH_SLICE` writes per transaction. */
  start(timers: Timers): void {
    this.timers = timers;
    this.stop ??= every(() => this.flushSliced(), FLUSH_MS, timers, { unref: true });
  }

  /** Writes what is queued now, in one transaction. */
  flush(): void {
    this.write(this.pending.length);
    if (this.failed === null) this.afterWork();
  }

  /** One slice now; the rest a slice per turn of the event loop, until the queue is empty. */
  private flushSliced(): void {
    this.flushing = true;
    if (this.nextSlice !== null) return;
    this.turn();
  }

  /**
   * Runs `steps` one per turn of the event loop from the next, after the queue's slices, until
   * done (without timers, all now). Ignored while another chore runs (false). A step that throws
   * gives the database up.
   */
  startChore(steps: Iterator<unknown>): boolean {
    if (this.chore !== null || this.failed !== null) return false;
    this.chore = steps;
    if (this.timers === null) {
      while (this.chore !== null) this.step();
    } else if (this.nextSlice === null) {
      this.nextSlice = this.timers.set(() => this.turn(), 0);
    }
    return true;
  }

  /** A chore held back by `choreMayStep` may step again: the next turn is armed. */
  resume(): void {
    if (this.chore === null || this.nextSlice !== null || this.timers === null) return;
    if (this.failed !== null) return;
    this.nextSlice = this.timers.set(() => this.turn(), 0);
  }

  /**
   * One unit of work: a slice of the queue, else a step of the chore (if it may step now); the
   * next turn is armed while either has more (a chore held back waits for `resume`).
   */
  private turn(): void {
    this.nextSlice = null;
    let worked = true;
    if (this.flushing && this.pending.length > 0) this.write(FLUSH_SLICE);
    else if (this.chore !== null && this.choreMayStep()) this.step();
    else worked = false;
    if (worked && this.failed === null) this.afterWork();
    // The work may have started a chore, which armed the next turn itself.
    if (this.failed !== null || this.timers === null || this.nextSlice !== null) return;
    if (
      (this.flushing && this.pending.length > 0) ||
      (this.chore !== null && this.choreMayStep())
    ) {
      this.nextSlice = this.timers.set(() => this.turn(), 0);
    }
  }

  private step(): void {
    try {
      this.logBytes += STEP_LOG_BYTES;
      if (this.chore?.next().done) this.chore = null;
    } catch (err) {
      this.chore = null;
      this.giveUp(err);
    }
  }

  /** Writes the oldest `max` queued writes in one transaction; the bounds are kept after the last. */
  private write(max: number): void {
    if (this.failed !== null || this.pending.length === 0) return;
    const writes = max >= this.pending.length ? this.pending : this.pending.slice(0, max);
    this.pending = writes === this.pending ? [] : this.pending.slice(max);
    try {
      let bytes = 0;
      this.transaction(() => {
        for (const write of writes) bytes += write();
      });
      this.logBytes += bytes;
      this.rowBytes += bytes;
      this.dropped = 0;
      if (this.pending.length === 0) {
        this.flushing = false;
        this.afterFlush();
      }
    } catch (err) {
      this.giveUp(err);
    }
  }

  /** A last flush, and no timer any more. */
  close(): void {
    this.stop?.();
    this.stop = null;
    if (this.nextSlice !== null) this.timers?.clear(this.nextSlice);
    this.nextSlice = null;
    // Upkeep left undone is done at the next open.
    this.chore = null;
    this.flush();
  }

  /** Stops writing for good (a failed write, a failed bound): memory only from now on. */
  giveUp(err: unknown): void {
    if (this.failed !== null) return;
    this.failed = err instanceof Error ? err.message : String(err);
    this.pending = [];
    this.log.warn(`the database failed (${this.failed}); qm goes on with memory only`);
  }
}
