/**
 * WAL checkpoints off qm's thread. SQLite copies the write-ahead log back into the file at a
 * checkpoint and `fsync`s both; left to itself it does that inside a commit once the log
 * holds 1 000 pages — on qm's event loop, 20 – 30 ms on this box's disk, every few seconds
 * under thousands of requests a second, every stream held up meanwhile. So qm's connection
 * never checkpoints (`wal_autocheckpoint = 0`): once about `CHECKPOINT_BYTES` went into the
 * log since the last checkpoint (`Batch.logBytes`), a worker thread opens the file, runs a
 * passive checkpoint (it never waits for qm's writes, nor they for it) and closes it again.
 * The worker starts with the first checkpoint a qm needs; one that cannot start, or fails,
 * hands checkpoints back to SQLite's own (said once in the log). Design: design.md,
 * "Checkpoints off the event loop".
 */
import type { Logger } from "../shared/log.ts";

/** Log written between checkpoints (SQLite's own is 1 000 pages, about 4 MiB). */
export const CHECKPOINT_BYTES = 4 << 20;

/**
 * The most the log's file keeps once a checkpoint took it all in (`journal_size_limit`): SQLite
 * writes the log again from its start but never shrinks the file, so a burst (the bounds'
 * deletes, a checkpoint held up by a long read) would otherwise hold its high-water mark on
 * disk for as long as qm runs. Truncated back to this at the first commit after the log begins
 * again.
 */
export const WAL_KEEP_BYTES = 2 * CHECKPOINT_BYTES;

/** A passive checkpoint's answer (SQLite's `wal_checkpoint` row), or why it failed. */
export type CheckpointResult =
  | { ok: true; busy: number; log: number; checkpointed: number }
  | { ok: false; error: string };

/** What runs checkpoints: a Worker (`checkpointWorker`), or a stand-in in tests. */
export interface CheckpointThread {
  /** Checkpoints the database file at this path, and answers a `CheckpointResult`. */
  postMessage(file: string): void;
  onmessage: ((event: MessageEvent<CheckpointResult>) => void) | null;
  onerror: ((event: ErrorEvent) => void) | null;
  terminate(): void;
}

/**
 * The worker's code, as a module of its own: it answers each path with one passive checkpoint
 * on a connection of its own, closed before the answer goes: by the time qm hears of it the
 * worker holds no file (nor does it between checkpoints).
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
self.onmessage = (event) => {
  let db = null;
  let answer;
  try {
    db = new Database(event.data, { readwrite: true, create: false });
    const r = db.query("PRAGMA wal_checkpoint(PASSIVE)").get();
    answer = { ok: true, busy: r.busy, log: r.log, checkpointed: r.checkpointed };
  } catch (err) {
    answer = { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  try { db?.close(); } catch {}
  postMessage(answer);
};
`;

/** A worker thread that checkpoints; it does not keep qm running. */
export function checkpointWorker(): CheckpointThread {
  const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
  const worker = new Worker(url);
  worker.unref();
  return worker as unknown as CheckpointThread;
}

export class Checkpointer {
  private thread: CheckpointThread | null = null;
  /** A checkpoint is under way. */
  running = false;
  /** `close` was called: nothing more starts, and a late answer is ignored. */
  private closed = false;
  /** Why checkpoints went back to SQLite's own, or null. */
  private failed: string | null = null;

  constructor(
    /** The database file. */
    private readonly file: string,
    private readonly log: Logger,
    /** Checkpoints could not run here: SQLite's own must (once). */
    private readonly onFailed: () => void,
    private readonly makeThread: () => CheckpointThread = checkpointWorker,
    /** Each checkpoint's answer, or the worker's failure as one. */
    private readonly onResult: (r: CheckpointResult) => void = () => {},
  ) {}

  /** Checkpoints now, off qm's thread, unless one is running (it will have covered most). */
  run(): void {
    if (this.running || this.failed !== null || this.closed) return;
    if (this.thread === null) {
      try {
        this.thread = this.makeThread();
      } catch (err) {
        this.fail(err instanceof Error ? err.message : String(err));
        return;
      }
      this.thread.onmessage = (event) => this.answered(event.data);
      this.thread.onerror = (event) =>
        this.answered({ ok: false, error: event.message || "the checkpoint worker failed" });
    }
    this.running = true;
    this.thread.postMessage(this.file);
  }

  /** Stops the worker for good (a checkpoint under way is left to finish or to the next open). */
  close(): void {
    this.closed = true;
    this.stopThread();
  }

  private stopThread(): void {
    if (this.thread !== null) {
      this.thread.onmessage = null;
      this.thread.onerror = null;
      this.thread.terminate();
    }
    this.thread = null;
    this.running = false;
  }

  private answered(r: CheckpointResult): void {
    if (this.closed) return;
    this.running = false;
    if (!r.ok) this.fail(r.error);
    this.onResult(r);
  }

  private fail(why: string): void {
    if (this.failed !== null) return;
    this.failed = why;
    this.stopThread();
    this.log.warn(`WAL checkpoints on a worker thread failed (${why}); SQLite checkpoints itself`);
    this.onFailed();
  }
}
