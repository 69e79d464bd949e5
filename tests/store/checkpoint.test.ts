/** WAL checkpoints off qm's thread: a worker's, paced by what was written; SQLite's own as the fallback. */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/shared/log.ts";
import {
  CHECKPOINT_BYTES,
  type CheckpointResult,
  type CheckpointThread,
  WAL_KEEP_BYTES,
} from "../../src/store/checkpoint.ts";
import { StateDb, type StoreOptions } from "../../src/store/database.ts";
import { turnTimers } from "../support/fake-timers.ts";
import { usageRow } from "../support/store-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-checkpoint-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in thread: records what it was asked; `answer` replies as the worker would. */
function standIn() {
  const asked: string[] = [];
  let terminated = 0;
  const thread: CheckpointThread = {
    onmessage: null,
    onerror: null,
    postMessage: (file) => asked.push(file),
    terminate: () => {
      terminated++;
    },
  };
  const answer = (r: CheckpointResult) =>
    thread.onmessage?.({ data: r } as MessageEvent<CheckpointResult>);
  return { thread, asked, answer, terminated: () => terminated };
}

function open(name: string, opts: Partial<StoreOptions> = {}) {
  const lines: string[] = [];
  const file = join(dir, name);
  const r = StateDb.open(file, {
    bounds: { maxAgeMs: 1e12, maxBytes: 1 << 30 },
    log: createLogger("warn", (l) => lines.push(l)),
    ...opts,
  });
  if (!r.ok) throw new Error(r.reason);
  return { db: r.db, file, lines };
}

const FILLER = "x".repeat(64 * 1024);
/** Writes about `bytes` of stored Responses, a flush per 1 MiB. */
function write(db: StateDb, bytes: number, from = 0): number {
  let i = from;
  for (let n = 0; n < bytes; n += FILLER.length) {
    db.responses.put(`resp_${i++}`, {
      owner: "k",
      response: { filler: FILLER },
      conversation: [],
      inputItems: [],
    });
    if (i % 16 === 0) db.flush();
  }
  db.flush();
  return i;
}

const walBytes = (file: string) => statSync(`${file}-wal`).size;

describe("checkpoints", () => {
  test("qm's connection never checkpoints; the thread is asked once CHECKPOINT_BYTES were written", () => {
    const t = standIn();
    const { db, file } = open("paced.db", { checkpointThread: () => t.thread });
    let next = write(db, CHECKPOINT_BYTES / 2);
    expect(t.asked).toEqual([]);
    next = write(db, CHECKPOINT_BYTES / 2 + FILLER.length, next);
    expect(t.asked).toEqual([file]);
    // A checkpoint still running is not asked for again.
    next = write(db, CHECKPOINT_BYTES, next);
    expect(t.asked).toHaveLength(1);
    // SQLite's own would have checkpointed at 1 000 pages and begun the log again.
    expect(walBytes(file)).toBeGreaterThan(2 * CHECKPOINT_BYTES);
    // Answered: more went in while it ran, so one more runs at once (the log begins again
    // only once a checkpoint took in all of it); then none until another CHECKPOINT_BYTES.
    t.answer({ ok: true, busy: 0, log: 10, checkpointed: 10 });
    expect(t.asked).toHaveLength(2);
    t.answer({ ok: true, busy: 0, log: 10, checkpointed: 10 });
    expect(t.asked).toHaveLength(2);
    next = write(db, CHECKPOINT_BYTES / 2, next);
    expect(t.asked).toHaveLength(2);
    next = write(db, CHECKPOINT_BYTES / 2 + FILLER.length, next);
    expect(t.asked).toHaveLength(3);
    // Written while the third runs; then closed before its answer is handled.
    write(db, FILLER.length, next + 1000);
    const late = t.thread.onmessage;
    db.close();
    expect(t.terminated()).toBe(1);
    expect(t.thread.onmessage).toBeNull();
    // An answer already on its way starts nothing after the close (no thread on a closed file).
    late?.({
      data: { ok: true, busy: 0, log: 10, checkpointed: 10 },
    } as MessageEvent<CheckpointResult>);
    expect(t.asked).toHaveLength(3);
  });

  test("the worker thread checkpoints the whole log, and the rows stay readable", async () => {
    const results: CheckpointResult[] = [];
    let done: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      done = resolve;
    });
    const { db, file } = open("worker.db", {
      onCheckpoint: (r) => {
        results.push(r);
        done();
      },
    });
    write(db, CHECKPOINT_BYTES + FILLER.length);
    await answered;
    expect(results).toHaveLength(1);
    const r = results[0]!;
    if (!r.ok) throw new Error(r.error);
    expect(r.log).toBeGreaterThan(1000);
    expect(r.checkpointed).toBe(r.log);
    expect(db.responses.get("resp_3")).not.toBeNull();
    // The next writes begin the log again: it grows no further.
    const high = walBytes(file);
    write(db, CHECKPOINT_BYTES / 2, 10_000);
    expect(walBytes(file)).toBe(high);
    db.close();
  });

  test("a burst's log is cut back to WAL_KEEP_BYTES once a checkpoint took it all in", () => {
    const t = standIn();
    const { db, file } = open("burst.db", { checkpointThread: () => t.thread });
    // A checkpoint asked for and not yet answered while three times as much goes in.
    const next = write(db, 4 * CHECKPOINT_BYTES);
    expect(t.asked).toHaveLength(1);
    expect(walBytes(file)).toBeGreaterThan(WAL_KEEP_BYTES + CHECKPOINT_BYTES);
    // The checkpoint the thread would run, on a connection of its own, taking in the whole log.
    const other = new Database(file);
    const row = other.query("PRAGMA wal_checkpoint(PASSIVE)").get() as Record<string, number>;
    other.close();
    expect(Object.values(row)).toEqual([0, expect.any(Number), expect.any(Number)]);
    t.answer({ ok: true, busy: 0, log: 1, checkpointed: 1 });
    // The next commit begins the log again and cuts the file back.
    write(db, FILLER.length, next + 1000);
    expect(walBytes(file)).toBeLessThanOrEqual(WAL_KEEP_BYTES);
    expect(db.responses.get("resp_3")).not.toBeNull();
    db.close();
  });

  test("a checkpoint that fails, or a thread that cannot start: said once, SQLite checkpoints itself", () => {
    const t = standIn();
    const failing = open("fails.db", { checkpointThread: () => t.thread });
    let next = write(failing.db, CHECKPOINT_BYTES + FILLER.length);
    t.answer({ ok: false, error: "database is locked" });
    expect(failing.lines).toHaveLength(1);
    expect(failing.lines[0]).toContain(
      "WAL checkpoints on a worker thread failed (database is locked); SQLite checkpoints itself",
    );
    const high = walBytes(failing.file);
    next = write(failing.db, 3 * CHECKPOINT_BYTES, next);
    // SQLite's own checkpoints begin the log again: it grows no further.
    expect(walBytes(failing.file)).toBeLessThanOrEqual(high + CHECKPOINT_BYTES / 4);
    expect(t.asked).toHaveLength(1);
    failing.db.close();

    const none = open("none.db", {
      checkpointThread: () => {
        throw new Error("no threads here");
      },
    });
    write(none.db, CHECKPOINT_BYTES + FILLER.length);
    expect(none.lines).toHaveLength(1);
    expect(none.lines[0]).toContain("(no threads here)");
    none.db.close();
  });

  test("the bounds' steps wait while a checkpoint runs, and go on once it answered", () => {
    const t = standIn();
    let now = 0;
    const { db } = open("held.db", {
      checkpointThread: () => t.thread,
      bounds: { maxAgeMs: 1000, maxBytes: 1 << 30 },
      now: () => now,
    });
    const { timers, turns, turn } = turnTimers();
    db.start(timers);
    write(db, CHECKPOINT_BYTES + FILLER.length); // a checkpoint under way from here
    expect(t.asked).toHaveLength(1);
    now = 10_000; // every Response written is past max_age now
    // The 60th write of the queue starts the bounds' steps.
    for (let s = 0; s < 59; s++) {
      db.usage.put(usageRow({ key: `k${s}` }));
      timers.advance(1000);
    }
    const before = db.counts().responses;
    expect(turns.size).toBe(1);
    turn(); // held back: nothing deleted, no turn spins
    expect(db.counts().responses).toBe(before);
    expect(turns.size).toBe(0);
    // Answered, with writes made while it ran: one more checkpoint first, then the steps.
    t.answer({ ok: true, busy: 0, log: 10, checkpointed: 10 });
    expect(t.asked).toHaveLength(2);
    expect(turns.size).toBe(0);
    t.answer({ ok: true, busy: 0, log: 10, checkpointed: 10 });
    expect(turns.size).toBe(1);
    turn();
    expect(db.counts().responses).toBeLessThan(before);
    db.close();
  });
});
