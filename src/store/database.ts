/**
 * qm's SQLite database (`qm.db` in `server.state_dir`): opened once at start in WAL mode, with
 * its tables; a file that cannot be opened is a reason, and qm goes on with memory only
 * (design.md). Everything written goes through the one write queue (`batch.ts`).
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "../shared/log.ts";
import type { Timers } from "../shared/timer.ts";
import { Batch } from "./batch.ts";
import {
  CHECKPOINT_BYTES,
  Checkpointer,
  type CheckpointResult,
  type CheckpointThread,
  WAL_KEEP_BYTES,
} from "./checkpoint.ts";
import { type Bounds, liveBytes, prune, pruneSteps } from "./prune.ts";
import { RequestRows } from "./requests.ts";
import { ResponseRows } from "./responses.ts";
import { UsageRows } from "./usage.ts";

/** The file's name in `server.state_dir`. */
export const DB_FILE = "qm.db";

/** The schema's version (`PRAGMA user_version`); a newer file is not opened. */
const VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS responses (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_created ON responses (created_ms);
CREATE TABLE IF NOT EXISTS requests (
  id INTEGER PRIMARY KEY,
  time_ms INTEGER NOT NULL,
  key TEXT NOT NULL,
  record TEXT NOT NULL,
  capture TEXT
);
CREATE INDEX IF NOT EXISTS requests_time ON requests (time_ms);
CREATE TABLE IF NOT EXISTS usage (
  hour_ms INTEGER NOT NULL,
  key TEXT NOT NULL,
  model TEXT NOT NULL,
  requests INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  wait_ms REAL NOT NULL,
  swaps INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, key, model)
);
`;

export interface StoreOptions {
  bounds: Bounds;
  log: Logger;
  /** Wall-clock epoch ms (rows' ages); default `Date.now`. */
  now?: () => number;
  /** What runs the WAL checkpoints (checkpoint.ts); default a worker thread. */
  checkpointThread?: () => CheckpointThread;
  /** Each checkpoint's answer (tests). */
  onCheckpoint?: (r: CheckpointResult) => void;
}

/** SQLite's own checkpoint threshold, in pages, restored when the worker cannot run. */
const AUTOCHECKPOINT_PAGES = 1000;

/** The bounds are kept after every this many writes of the queue (about a minute)… */
const PRUNE_EVERY = 60;
/**
 * …or sooner, once rows of this share of `max_mb` were written since they were last kept: at
 * thousands of requests a second a minute's rows are tens of MB, several times a small bound.
 */
const PRUNE_SHARE = 1 / 8;

export class StateDb {
  readonly responses: ResponseRows;
  readonly requests: RequestRows;
  readonly usage: UsageRows;
  private readonly batch: Batch;
  private flushes = 0;
  /** `batch.rowBytes` when the bounds were last kept. */
  private prunedAt = 0;
  /** Null for a database in memory (no log to checkpoint). */
  private readonly checkpointer: Checkpointer | null;
  /** `batch.logBytes` at the last checkpoint. */
  private checkpointedAt = 0;

  private constructor(
    private readonly db: Database,
    readonly file: string,
    private readonly opts: StoreOptions,
  ) {
    const now = opts.now ?? Date.now;
    this.checkpointer =
      file === ":memory:"
        ? null
        : new Checkpointer(
            file,
            opts.log,
            () => db.run(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`),
            opts.checkpointThread,
            (r) => {
              opts.onCheckpoint?.(r);
              this.checkpointed(r.ok);
            },
          );
    if (this.checkpointer !== null) db.run("PRAGMA wal_autocheckpoint = 0");
    this.batch = new Batch(
      (fn) => db.transaction(fn)(),
      opts.log,
      () => {
        const written = this.batch.rowBytes - this.prunedAt;
        if (++this.flushes < PRUNE_EVERY && written < opts.bounds.maxBytes * PRUNE_SHARE) return;
        if (this.batch.startChore(pruneSteps(db, opts.bounds, now()))) {
          this.flushes = 0;
          this.prunedAt = this.batch.rowBytes;
        }
      },
      () => this.checkpointIfDue(),
      // The bounds' steps wait for a checkpoint under way: with nothing written meanwhile it
      // takes in the whole log, and the next write begins the log again.
      () => !(this.checkpointer?.running ?? false),
    );
    this.responses = new ResponseRows(db, this.batch, now);
    this.requests = new RequestRows(db, this.batch);
    this.usage = new UsageRows(db, this.batch);
  }

  /**
   * Opens (creating it and its folder if need be) the database at `file` (":memory:" for one
   * that lasts as long as the process), or says why it cannot.
   */
  static open(
    file: string,
    opts: StoreOptions,
  ): { ok: true; db: StateDb } | { ok: false; reason: string } {
    let db: Database | null = null;
    try {
      if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
      db = new Database(file, { create: true, strict: true });
      db.run("PRAGMA busy_timeout = 2000");
      const version = db
        .query<{ user_version: number }, []>("PRAGMA user_version")
        .get()!.user_version;
      if (version > VERSION) {
        db.close();
        return {
          ok: false,
          reason: `${file} was written by a newer qm (schema ${version}, this qm knows ${VERSION})`,
        };
      }
      // Set before the first table: freed pages can then be given back (prune.ts).
      if (version === 0) db.run("PRAGMA auto_vacuum = INCREMENTAL");
      db.run("PRAGMA journal_mode = WAL");
      db.run(`PRAGMA journal_size_limit = ${WAL_KEEP_BYTES}`);
      db.run("PRAGMA synchronous = NORMAL");
      db.run(SCHEMA);
      db.run(`PRAGMA user_version = ${VERSION}`);
      const store = new StateDb(db, file, opts);
      store.prune();
      return { ok: true, db: store };
    } catch (err) {
      try {
        db?.close();
      } catch {
        // Closing a handle that failed to open says nothing more.
      }
      return { ok: false, reason: `${file}: ${describe(err)}` };
    }
  }

  /** Writes the queue once a second on `timers`. */
  start(timers: Timers): void {
    this.batch.start(timers);
  }

  /** Writes what is queued now. */
  flush(): void {
    this.batch.flush();
  }

  /** Why the database was given up after it opened, or null. */
  get failed(): string | null {
    return this.batch.failed;
  }

  /** Writes queued, not yet written. */
  get queued(): number {
    return this.batch.size;
  }

  /** Bytes the rows take now. */
  bytes(): number {
    return this.batch.failed === null ? liveBytes(this.db) : 0;
  }

  /** Rows kept, per table (`qm doctor`). */
  counts(): { responses: number; requests: number; usage: number } {
    const n = (table: string) =>
      this.db.query<{ n: number }, []>(`SELECT COUNT(*) AS n FROM ${table}`).get()!.n;
    return { responses: n("responses"), requests: n("requests"), usage: n("usage") };
  }

  /** The last write, then the file is closed. */
  close(): void {
    this.batch.close();
    this.checkpointer?.close();
    try {
      this.db.close();
    } catch {
      // Already closed.
    }
  }

  /**
   * After a write: a checkpoint once about `CHECKPOINT_BYTES` went into the log since the last.
   * (Not the log file's size: a log begun again keeps its size and is written over; cut back
   * to nothing each time, its growth made the next writes wait on the file system.)
   */
  private checkpointIfDue(): void {
    if (this.checkpointer === null || this.checkpointer.running) return;
    if (this.batch.logBytes - this.checkpointedAt < CHECKPOINT_BYTES) return;
    this.checkpointedAt = this.batch.logBytes;
    this.checkpointer.run();
  }

  /**
   * A checkpoint answered. What was written while it ran is in the log past what it copied,
   * and SQLite begins the log again only once a checkpoint took in all of it: so if anything
   * was, one more runs at once (it has only that to copy). Otherwise the bounds' steps, held
   * back meanwhile, go on.
   */
  private checkpointed(ok: boolean): void {
    if (ok && this.batch.logBytes > this.checkpointedAt) {
      this.checkpointedAt = this.batch.logBytes;
      this.checkpointer?.run();
      return;
    }
    this.batch.resume();
  }

  /** The bounds, all at once (at open). */
  private prune(): void {
    try {
      prune(this.db, this.opts.bounds, (this.opts.now ?? Date.now)());
    } catch (err) {
      this.batch.giveUp(err);
    }
  }
}

/** A failure to open, in a few words: SQLite's code said plainly. */
function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case "SQLITE_CANTOPEN":
      return "cannot open or create the file (is the folder writable?)";
    case "SQLITE_NOTADB":
      return "the file is not an SQLite database (damaged, or another program's)";
    case "SQLITE_CORRUPT":
      return "the database file is damaged";
    case "SQLITE_READONLY":
      return "the file or its folder is read-only";
    case "SQLITE_FULL":
      return "the disk is full";
    default:
      return message;
  }
}
