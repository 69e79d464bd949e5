/** The database's bounds: rows past `max_age_days` go; past `max_mb` the oldest go first. */

import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/shared/log.ts";
import { StateDb } from "../../src/store/database.ts";
import { PRUNE_SLICE, pruneSteps } from "../../src/store/prune.ts";
import { turnTimers } from "../support/fake-timers.ts";
import { usageRow } from "../support/store-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "qm-prune-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const log = createLogger("error", () => {});
const DAY = 24 * 3600 * 1000;

function open(file: string, now: number, bounds: { maxAgeMs: number; maxBytes: number }) {
  const r = StateDb.open(file, { bounds, log, now: () => now });
  if (!r.ok) throw new Error(r.reason);
  return r.db;
}

/** A database serving on turn timers (max_age one day), its wall clock set by `setNow`. */
function serving(name: string, maxBytes: number) {
  let now = 0;
  const r = StateDb.open(join(dir, name), {
    bounds: { maxAgeMs: DAY, maxBytes },
    log,
    now: () => now,
  });
  if (!r.ok) throw new Error(r.reason);
  const { timers, turns, turn } = turnTimers();
  r.db.start(timers);
  return {
    db: r.db,
    timers,
    turns,
    turn,
    setNow: (ms: number) => {
      now = ms;
    },
  };
}

const rec = (id: number, time: number) => ({
  id,
  time,
  key: "k",
  model: "m",
  api: "openai" as const,
  status: 200,
  answered: true,
  wait_ms: 0,
  swap: false,
  duration_ms: 1,
  ttft_ms: null,
  prompt_tokens: null,
  completion_tokens: null,
  cached_tokens: null,
  finish_reason: null,
});

describe("bounds", () => {
  test("rows older than max_age_days go at the next open; younger ones stay", () => {
    const file = join(dir, "age.db");
    const big = { maxAgeMs: 100 * DAY, maxBytes: 1 << 30 };
    let db = open(file, 0, big);
    for (let day = 0; day < 10; day++) {
      db.requests.put(rec(day + 1, day * DAY), null);
      db.usage.put(usageRow({ hour: day * DAY }));
    }
    db.close();
    db = open(file, 10 * DAY, { maxAgeMs: 3.5 * DAY, maxBytes: 1 << 30 });
    expect(db.requests.latest(100).map((r) => r.id)).toEqual([8, 9, 10]);
    expect(db.usage.since(0).map((u) => u.hour / DAY)).toEqual([7, 8, 9]);
    db.close();
  });

  test("past max_mb the oldest go first, until the rows fit", () => {
    const file = join(dir, "size.db");
    const now = 1_000_000;
    let db = open(file, now, { maxAgeMs: DAY, maxBytes: 1 << 30 });
    const filler = "x".repeat(20_000);
    for (let i = 0; i < 200; i++) {
      db.responses.put(`resp_${String(i).padStart(3, "0")}`, {
        owner: "k",
        response: { id: i, filler },
        conversation: [],
        inputItems: [],
      });
      db.flush();
    }
    expect(db.bytes()).toBeGreaterThan(3 << 20);
    db.close();
    const limit = 1 << 20;
    db = open(file, now, { maxAgeMs: DAY, maxBytes: limit });
    expect(db.bytes()).toBeLessThanOrEqual(limit);
    const left = db.counts().responses;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(50);
    // The newest are the ones kept.
    expect(db.responses.get("resp_199")).not.toBeNull();
    expect(db.responses.get("resp_000")).toBeNull();
    db.close();
  });

  test("in steps: no step deletes more than PRUNE_SLICE rows, and the steps end with the bounds kept", () => {
    const file = join(dir, "steps.db");
    const db = open(file, 0, { maxAgeMs: 100 * DAY, maxBytes: 1 << 30 });
    const n = 3 * PRUNE_SLICE + 17;
    for (let i = 1; i <= n; i++) db.requests.put(rec(i, i <= n - 10 ? 0 : 10 * DAY), null);
    db.close();
    const raw = new Database(file);
    const count = () => raw.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM requests").get()!.n;
    const steps = pruneSteps(raw, { maxAgeMs: DAY, maxBytes: 1 << 30 }, 10 * DAY);
    const after: number[] = [];
    let before = count();
    for (let r = steps.next(); !r.done; r = steps.next()) {
      const now = count();
      expect(before - now).toBeLessThanOrEqual(PRUNE_SLICE);
      after.push(now);
      before = now;
    }
    expect(count()).toBe(10);
    expect(after.slice(0, 4)).toEqual([
      n - PRUNE_SLICE,
      n - 2 * PRUNE_SLICE,
      n - 3 * PRUNE_SLICE,
      10,
    ]);
    raw.close();
  });

  test("while serving, the bounds are kept about once a minute, a step per turn", () => {
    const { db, timers, turns, turn, setNow } = serving("serving.db", 1 << 30);
    for (let i = 1; i <= 2 * PRUNE_SLICE; i++) db.requests.put(rec(i, 0), null);
    timers.advance(1000);
    while (turns.size > 0) turn(); // the rest of that flush, a slice per turn
    setNow(2 * DAY);
    // 59 more flushes that wrote something; the 60th starts the bounds' steps, from the next turn.
    for (let s = 0; s < 59; s++) {
      db.requests.put(rec(10_000 + s, 2 * DAY), null);
      timers.advance(1000);
    }
    expect(turns.size).toBe(1);
    expect(db.counts().requests).toBe(2 * PRUNE_SLICE + 59);
    turn();
    expect(db.counts().requests).toBe(PRUNE_SLICE + 59);
    turn();
    expect(db.counts().requests).toBe(59);
    while (turns.size > 0) turn();
    expect(db.counts().requests).toBe(59);
    db.close();
  });

  test("rows of an eighth of max_mb written since the bounds were kept: kept again, not a minute later", () => {
    const { db, timers, turns, turn, setNow } = serving("busy.db", 1 << 20);
    // Rows past max_age, under an eighth of the bound (about 300 bytes each): the flush that
    // writes them starts nothing.
    for (let i = 1; i <= 200; i++) db.requests.put(rec(i, 0), null);
    setNow(2 * DAY);
    timers.advance(1000);
    while (turns.size > 0) turn();
    expect(db.counts().requests).toBe(200);
    // The second flush takes the rows written past 128 KiB: the bounds' steps start from it.
    for (let i = 201; i <= 600; i++) db.requests.put(rec(i, 0), null);
    timers.advance(1000);
    while (turns.size > 0) turn();
    expect(db.counts().requests).toBe(0);
    db.close();
  });
});
