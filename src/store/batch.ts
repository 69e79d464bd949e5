/**
 * The write queue: the request path only queues (never a statement, never an `fsync`); once a
 * second, on the injected timers, everything queued is written in one transaction. A crash
 * loses at most what was queued since the last write. The queue is bounded: past `MAX_PENDING`
 * the oldest writes are dropped (said once in the log). A write that fails is logged once and
 * the database is given up: qm goes on with memory only.
 */
import type { Logger } from "../shared/log.ts";
import { every, type Timers } from "../shared/timer.ts";

/** One queued write: runs inside the transaction. */
export type Write = () => void;

/** Writes queued at most; past it the oldest are dropped. */
export const MAX_PENDING = 10_000;
export const FLUSH_MS = 1000;

export class Batch {
  private pending: Write[] = [];
  private dropped = 0;
  private stop: (() => void) | null = null;
  /** Why writing was given up, or null. */
  failed: string | null = null;

  constructor(
    /** Runs `fn` in one transaction. */
    private readonly transaction: (fn: () => void) => void,
    private readonly log: Logger,
    /** After each write of the queue (the database's bounds are kept then). */
    private readonly afterFlush: () => void = () => {},
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

  /** Writes every second on `timers` until `close`. */
  start(timers: Timers): void {
    this.stop ??= every(() => this.flush(), FLUSH_MS, timers, { unref: true });
  }

  /** Writes what is queued now, in one transaction. */
  flush(): void {
    if (this.failed !== null || this.pending.length === 0) return;
    const writes = this.pending;
    this.pending = [];
    try {
      this.transaction(() => {
        for (const write of writes) write();
      });
      this.dropped = 0;
      this.afterFlush();
    } catch (err) {
      this.giveUp(err);
    }
  }

  /** A last flush, and no timer any more. */
  close(): void {
    this.stop?.();
    this.stop = null;
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
